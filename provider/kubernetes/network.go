package kubernetes

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// createPolicy isolates the sandbox id before its pod exists: a
// NetworkPolicy selecting it that allows no ingress and no egress. The
// cluster's network plugin enforces it, or nothing does: the provider
// announces network_control only with network_policy_enforced (default
// true), which the operator sets false for a plugin without policies.
func (p *Provider) createPolicy(ctx context.Context, id string) error {
	cs, _ := p.client()
	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: p.namespace, Labels: withSandbox(baseLabels(RolePolicy), id)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelSandbox: id}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(p.namespace).Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return classify(ctx, "network policy create", err)
	}
	return nil
}

// adoptPolicy makes the pod the policy's owner, so the cluster's garbage
// collector removes the policy with the pod.
func (p *Provider) adoptPolicy(ctx context.Context, pod *corev1.Pod) error {
	cs, _ := p.client()
	patch := `{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"` + pod.Name + `","uid":"` + string(pod.UID) + `"}]}}`
	if _, err := cs.NetworkingV1().NetworkPolicies(p.namespace).Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return classify(ctx, "network policy adopt", err)
	}
	return nil
}

func withSandbox(labels map[string]string, id string) map[string]string {
	labels[LabelSandbox] = id
	return labels
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
