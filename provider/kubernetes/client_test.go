package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/resident-dev/resident/protocol"
)

// The lean client's refusals are the API server's Status, decoded (not a
// generic "the server could not find the requested resource"): apierrors
// reads them and classify gives the kinds the clientset's errors had.
func TestClientErrorsDecode(t *testing.T) {
	p := newTestProvider(t)
	cs, _ := p.client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	missing := "resident-no-such-" + newID()[len(idPrefix):]

	check := func(what string, err error, is func(error) bool, kind protocol.Kind, msg string) {
		t.Helper()
		var status *apierrors.StatusError
		switch {
		case err == nil:
			t.Errorf("%s: no error", what)
		case !errors.As(err, &status):
			t.Errorf("%s: %T %v, want a *StatusError", what, err, err)
		case !is(err):
			t.Errorf("%s: %v: not the reason expected (%s)", what, err, status.ErrStatus.Reason)
		case !strings.Contains(status.ErrStatus.Message, msg):
			t.Errorf("%s: message %q does not say %q: the Status body was not decoded", what, status.ErrStatus.Message, msg)
		}
		if got := protocol.KindOf(classify(ctx, what, err)); got != kind {
			t.Errorf("%s: kind %s, want %s", what, got, kind)
		}
	}
	_, err := cs.CoreV1().Pods(p.namespace).Get(ctx, missing, metav1.GetOptions{})
	check("pod get", err, apierrors.IsNotFound, protocol.KindNotFound, `pods "`+missing+`" not found`)
	_, err = cs.CoreV1().PersistentVolumeClaims(p.namespace).Get(ctx, missing, metav1.GetOptions{})
	check("claim get", err, apierrors.IsNotFound, protocol.KindNotFound, `persistentvolumeclaims "`+missing+`" not found`)
	err = cs.CoreV1().Pods(p.namespace).Delete(ctx, missing, metav1.DeleteOptions{})
	check("pod delete", err, apierrors.IsNotFound, protocol.KindNotFound, missing)
	_, err = cs.NetworkingV1().NetworkPolicies(p.namespace).Patch(ctx, missing, types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	check("policy patch", err, apierrors.IsNotFound, protocol.KindNotFound, `networkpolicies.networking.k8s.io "`+missing+`" not found`)
	bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_DNS_Name"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	_, err = cs.CoreV1().Pods(p.namespace).Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	check("pod create, invalid", err, apierrors.IsInvalid, protocol.KindInvalidRequest, "Not_A_DNS_Name")
	_, err = cs.CoreV1().Namespaces().Get(ctx, missing, metav1.GetOptions{})
	check("namespace get", err, apierrors.IsNotFound, protocol.KindNotFound, `namespaces "`+missing+`" not found`)
}

// Every call the provider makes, through the lean client, on real
// objects: a network policy created, read back from a list, patched,
// watched to its deletion; the test's namespace read (cluster-scoped).
func TestClientCalls(t *testing.T) {
	p := newTestProvider(t)
	cs, _ := p.client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, p.namespace, metav1.GetOptions{}); err != nil || ns.Name != p.namespace {
		t.Fatalf("namespace get: %v, %q", err, ns.Name)
	}
	id := newID()
	if err := p.createPolicy(ctx, id); err != nil {
		t.Fatal(err)
	}
	policies := cs.NetworkingV1().NetworkPolicies(p.namespace)
	t.Cleanup(func() { _ = policies.Delete(context.Background(), id, metav1.DeleteOptions{}) })
	if err := p.createPolicy(ctx, id); protocol.KindOf(err) != protocol.KindConflict {
		t.Fatalf("the same policy again: %v, want conflict", err)
	}
	list, err := policies.List(ctx, metav1.ListOptions{LabelSelector: LabelSandbox + "=" + id})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != id {
		t.Fatalf("policy list: %v, %d items", err, len(list.Items))
	}
	got, err := policies.Patch(ctx, id, types.MergePatchType, []byte(`{"metadata":{"annotations":{"resident.test/patched":"yes"}}}`), metav1.PatchOptions{})
	if err != nil || got.Annotations["resident.test/patched"] != "yes" || got.Spec.PodSelector.MatchLabels[LabelSandbox] != id {
		t.Fatalf("policy patch: %v, %+v", err, got.ObjectMeta)
	}
	w, err := policies.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", id).String(), ResourceVersion: got.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := policies.Delete(ctx, id, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch: %v", apierrors.FromObject(ev.Object))
		}
		if ev.Type == watch.Deleted {
			return
		}
	}
	t.Fatal("the watch ended before the deletion showed")
}
