package kubernetes

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A reader pod a dead resident left behind ends by itself, and the next
// resident's start removes it.
func TestSweepRemovesEndedReaders(t *testing.T) {
	p := newTestProvider(t)
	createForeignClaim(t, "sweep-test-claim")
	reader := p.readerPod("sweep-test-claim")
	reader.Spec.ActiveDeadlineSeconds = new(int64(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.CoreV1().Pods(testNamespace).Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.removeLeftoverPod(reader.Name) })
	awaitPod(t, reader.Name, "ended", func(pod *corev1.Pod) bool { return pod.Status.Phase == corev1.PodFailed })
	newTestProvider(t) // its ApplyAuth sweeps
	awaitPod(t, reader.Name, "removed", nil)
}

// awaitPod waits for cond on the pod, or (cond nil) for the pod to be gone.
func awaitPod(t *testing.T, name, what string, cond func(*corev1.Pod) bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		pod, err := admin.CoreV1().Pods(testNamespace).Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case cond == nil && apierrors.IsNotFound(err):
			return
		case cond != nil && err == nil && cond(pod):
			return
		case err != nil && !apierrors.IsNotFound(err):
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not %s in time", name, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
