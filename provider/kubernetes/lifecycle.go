package kubernetes

import (
	"context"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// listOne asks for at most one object: the cheapest call that still
// proves the credentials and the namespace.
var listOne = metav1.ListOptions{Limit: 1}

// ListOwned lists the owner's sandboxes by an exact label selector done by
// the API server, checked again here. A pod being deleted is gone already.
func (p *Provider) ListOwned(ctx context.Context, owner provider.Owner) ([]protocol.Sandbox, error) {
	if err := validateOwner(owner); err != nil {
		return nil, err
	}
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	cs, _ := p.client()
	list, err := cs.CoreV1().Pods(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: ownedSelector(owner)})
	if err != nil {
		return nil, classify(ctx, "pod list", err)
	}
	out := []protocol.Sandbox{}
	for i := range list.Items {
		pod := &list.Items[i]
		if !validID(pod.Name) || !isManaged(pod.Labels, RoleSandbox) || !owner.Owns(pod.Labels) || pod.DeletionTimestamp != nil {
			continue
		}
		out = append(out, protocol.Sandbox{SandboxID: pod.Name, Tags: hostTags(pod.Labels, pod.Annotations),
			CreatedAt: pod.CreationTimestamp.UTC(), State: p.stateOf(pod), Image: sandboxImage(pod)})
	}
	slices.SortFunc(out, func(a, b protocol.Sandbox) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// stateOf: a pod whose sandbox container runs is running; one that ended
// after its lifetime (activeDeadlineSeconds, or the keeper's own) is
// expired; any other that ended is stopped.
func (p *Provider) stateOf(pod *corev1.Pod) string {
	switch pod.Status.Phase {
	case corev1.PodRunning:
		if sandboxRunning(pod) {
			return protocol.StateRunning
		}
	case corev1.PodPending:
		return protocol.StateRunning
	case corev1.PodUnknown, "":
		return protocol.StateUnknown
	}
	if p.expired(pod) {
		return protocol.StateExpired
	}
	return protocol.StateStopped
}

func sandboxRunning(pod *corev1.Pod) bool {
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == containerSandbox {
			return st.State.Running != nil
		}
	}
	return false
}

func (p *Provider) expired(pod *corev1.Pod) bool {
	if pod.Status.Reason == "DeadlineExceeded" {
		return true
	}
	secs, err := strconv.ParseInt(pod.Labels[LabelLifetime], 10, 64)
	return err == nil && secs > 0 && !p.now().Before(pod.CreationTimestamp.Add(time.Duration(secs)*time.Second))
}

func sandboxImage(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == containerSandbox {
			return c.Image
		}
	}
	return ""
}

// getSandbox reads one of our sandbox pods; anything else (missing, not
// ours, being deleted) is the same not_found.
func (p *Provider) getSandbox(ctx context.Context, id string) (*corev1.Pod, error) {
	if !validID(id) {
		return nil, notFound(id)
	}
	cs, _ := p.client()
	pod, err := cs.CoreV1().Pods(p.namespace).Get(ctx, id, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, classify(ctx, "pod get", err)
	}
	if !isManaged(pod.Labels, RoleSandbox) || pod.DeletionTimestamp != nil {
		return nil, notFound(id)
	}
	return pod, nil
}

// checkRunning refuses a sandbox that does not run: expired or stopped
// (both conflict, as on Docker).
func (p *Provider) checkRunning(pod *corev1.Pod) error {
	switch {
	case pod.Status.Phase == corev1.PodRunning && sandboxRunning(pod):
		return nil
	case p.expired(pod):
		return protocol.Errorf(protocol.KindConflict, "sandbox %s expired (its lifetime_s ended); terminate it", pod.Name)
	}
	return protocol.Errorf(protocol.KindConflict, "sandbox %s is not running (%s)", pod.Name, pod.Status.Phase)
}

// explainExecFailure turns a refused exec into what the sandbox's state
// says: not_found, or conflict when it no longer runs; else err as is.
func (p *Provider) explainExecFailure(ctx context.Context, id string, err error) error {
	cctx, cancel := p.callCtx(context.WithoutCancel(ctx))
	defer cancel()
	pod, getErr := p.getSandbox(cctx, id)
	if getErr != nil {
		if protocol.KindOf(getErr) == protocol.KindNotFound {
			return getErr
		}
		return err
	}
	if notRunning := p.checkRunning(pod); notRunning != nil {
		return notRunning
	}
	return err
}

// ReadOwner reads the owner from the pod's labels.
func (p *Provider) ReadOwner(ctx context.Context, sandboxID, ownerKey string) (string, error) {
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	pod, err := p.getSandbox(ctx, sandboxID)
	if err != nil {
		return "", err
	}
	return provider.OwnerOf(pod.Labels, ownerKey), nil
}

// Terminate deletes the pod with a short grace period (its keeper ignores
// SIGTERM, so the kubelet's SIGKILL follows at once) and its network
// policy. Idempotent: a missing pod, or one already being deleted, is
// success with existed=false.
func (p *Provider) Terminate(ctx context.Context, sandboxID string) (bool, error) {
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	pod, err := p.getSandbox(ctx, sandboxID)
	if protocol.KindOf(err) == protocol.KindNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	p.terminated.Store(pod.Name, true)
	p.dropHolder(pod.Name)
	cs, _ := p.client()
	for {
		// The resource version as a precondition: of concurrent deletes, the
		// first one changes it (deletionTimestamp), so exactly one succeeds.
		rv := pod.ResourceVersion
		err = cs.CoreV1().Pods(p.namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64(p.timing.deleteWait / time.Second)),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID, ResourceVersion: &rv},
		})
		if err == nil {
			break
		}
		if !apierrors.IsConflict(err) {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, classify(ctx, "pod delete", err)
		}
		// Changed since we read it: deleted by someone else, or only a
		// status update (then delete again).
		if pod, err = p.getSandbox(ctx, sandboxID); err != nil {
			if protocol.KindOf(err) == protocol.KindNotFound {
				return false, nil
			}
			return false, err
		}
	}
	if err := cs.NetworkingV1().NetworkPolicies(p.namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		p.log.Debug("network policy delete", nameField(pod.Name))
	}
	return true, nil
}
