package kubernetes

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// The pod the cluster holds is hardened as the issue lists, and a none
// sandbox has its deny-all policy, owned by the pod.
func TestSandboxPodIsHardened(t *testing.T) {
	p := newTestProvider(t)
	owner := provider.Owner{Key: "resident-install-id", InstallID: "hard-" + newID()[len(idPrefix):]}
	id := createFor(t, p, owner, protocol.Spec{Image: cluster.Image, CPUs: 0.5, MemoryMB: 64, ReadOnlyRoot: true, LifetimeS: 600})
	pod, err := admin.CoreV1().Pods(testNamespace).Get(context.Background(), id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	switch {
	case s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken:
		t.Error("service account token mounted")
	case s.EnableServiceLinks == nil || *s.EnableServiceLinks:
		t.Error("service links on")
	case s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds < 600:
		t.Errorf("activeDeadlineSeconds %v", s.ActiveDeadlineSeconds)
	case s.SecurityContext == nil || s.SecurityContext.SeccompProfile == nil || s.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Error("no RuntimeDefault seccomp profile")
	}
	for _, c := range append(slices.Clone(s.InitContainers), s.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("container %s: %+v", c.Name, sc)
		}
		if c.Name == containerSandbox {
			if !slices.Equal(sc.Capabilities.Add, keeperCaps) || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("sandbox container: caps %v, read-only root %v", sc.Capabilities.Add, sc.ReadOnlyRootFilesystem)
			}
			if c.Resources.Limits.Cpu().MilliValue() != 500 || c.Resources.Limits.Memory().Value() != 64<<20 || !c.Resources.Requests.Cpu().Equal(*c.Resources.Limits.Cpu()) {
				t.Errorf("resources %+v", c.Resources)
			}
		}
	}
	// read_only_root: /tmp and the workdir are writable, the root is not.
	ctx := context.Background()
	if _, st, err := run(ctx, p, id, "sh", "-c", "touch /tmp/x && touch /work/x && ! touch /x 2>/dev/null"); err != nil || st.Code != 0 {
		t.Errorf("writable scratch on a read-only root: %+v %v", st, err)
	}
	policy, err := admin.NetworkingV1().NetworkPolicies(testNamespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("network none has no policy: %v", err)
	}
	if !slices.Equal(policy.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) ||
		len(policy.Spec.Ingress)+len(policy.Spec.Egress) != 0 || policy.Spec.PodSelector.MatchLabels[LabelSandbox] != id {
		t.Errorf("policy is not deny-all for the sandbox: %+v", policy.Spec)
	}
	if len(policy.OwnerReferences) != 1 || policy.OwnerReferences[0].UID != pod.UID {
		t.Errorf("policy not owned by its pod: %+v", policy.OwnerReferences)
	}
}
