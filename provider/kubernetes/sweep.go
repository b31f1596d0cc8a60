package kubernetes

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sweepReaders removes the reader pods a resident left behind when it died
// mid-call: those that ended (their keeper's lifetime, the cluster's
// deadline) and those older than a reader ever lives. Run at ApplyAuth; a
// failure is logged, never fatal: the cluster ends them anyway.
func (p *Provider) sweepReaders(ctx context.Context) {
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	cs, _ := p.client()
	list, err := cs.CoreV1().Pods(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: roleSelector(RoleReader)})
	if err != nil {
		p.log.Info("reader sweep: list failed", errField(err))
		return
	}
	oldest := p.now().Add(-time.Duration(readerLifetime+lifetimeSlack) * time.Second)
	for _, pod := range list.Items {
		ended := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		if pod.DeletionTimestamp != nil || !isManaged(pod.Labels, RoleReader) || (!ended && pod.CreationTimestamp.After(oldest)) {
			continue
		}
		uid := pod.UID
		err := cs.CoreV1().Pods(p.namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0)), Preconditions: &metav1.Preconditions{UID: &uid}})
		p.log.Info("reader sweep: removed a reader pod left behind", nameField(pod.Name), errField(err))
	}
}
