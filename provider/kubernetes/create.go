package kubernetes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Create makes the sandbox's pod (and, for network "none", the network
// policy that isolates it, before the pod exists) and returns once the pod
// runs, or with a typed error within timing.podStart: an image the nodes
// cannot pull is not_found, a pod the scheduler cannot place for lack of
// resources is quota, anything else is transient; nothing is left behind.
func (p *Provider) Create(ctx context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string) (string, error) {
	if err := provider.RefuseUnannounced(p.Info(), nil, &spec); err != nil {
		return "", err
	}
	if err := validateSpec(spec); err != nil {
		return "", err
	}
	labels, tagKeys, err := sandboxLabels(spec, owner, tags)
	if err != nil {
		return "", err
	}
	id := newID()
	labels[LabelSandbox] = id
	ctx, cancel := context.WithTimeoutCause(ctx, p.timing.podStart, errPodStartTimeout)
	defer cancel()
	claims, err := p.claimsFor(ctx, owner, spec.Volumes)
	if err != nil {
		return "", err
	}
	pod, err := p.sandboxPod(id, spec, labels, tagKeys, claims)
	if err != nil {
		return "", err
	}
	cs, _ := p.client()
	isolated := spec.Network == "" || spec.Network == "none"
	if isolated {
		if err := p.createPolicy(ctx, id); err != nil {
			return "", err
		}
	}
	created, err := cs.CoreV1().Pods(p.namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if isolated {
			p.removeLeftovers(id, "")
		}
		return "", classify(ctx, "pod create", err)
	}
	if isolated {
		// Owned by the pod: the cluster removes it with the pod, whoever
		// deletes that.
		if err := p.adoptPolicy(ctx, created); err != nil {
			p.removeLeftovers(id, created.UID)
			return "", err
		}
	}
	early, err := p.awaitRunning(ctx, created)
	if err != nil {
		p.removeLeftovers(id, created.UID)
		return "", err
	}
	p.learnPod(created)
	if conn, rw := early.finish(); conn != nil {
		p.holdChannel(id, conn, rw)
	}
	return id, nil
}

var errPodStartTimeout = fmt.Errorf("the pod did not start in time")

// awaitRunning watches the pod until its sandbox container runs, or a
// state says it never will. For a channel pod it opens the channel on the
// way (earlyOpen), and a channel the keeper welcomed is the pod running:
// the status would say so only at the kubelet's next relist.
func (p *Provider) awaitRunning(ctx context.Context, pod *corev1.Pod) (early *earlyOpen, err error) {
	defer func() {
		if err != nil {
			early.stop()
		}
	}()
	cs, _ := p.client()
	var last string
	for {
		w, err := cs.CoreV1().Pods(p.namespace).Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(), ResourceVersion: pod.ResourceVersion,
		})
		if err != nil {
			return early, p.startFailed(ctx, last, classify(ctx, "pod watch", err))
		}
		done, why, err := p.watchStart(ctx, w, pod.Name, &early)
		w.Stop()
		if done || err != nil {
			return early, err
		}
		if why.pod != nil {
			pod, last = why.pod, why.waiting
		}
		if ctx.Err() != nil {
			return early, p.startFailed(ctx, last, nil)
		}
		// The watch ended (the API server closes them now and then): go on
		// from the last version seen.
		time.Sleep(50 * time.Millisecond)
	}
}

// startProgress is the last state a watch showed: the pod, and why it is
// still waiting.
type startProgress struct {
	pod     *corev1.Pod
	waiting string
}

// watchStart follows one watch of the starting pod to its end: done when
// the sandbox container runs (its status, or the keeper's Welcome on a
// channel opened early), an error when it never will.
func (p *Provider) watchStart(ctx context.Context, w watch.Interface, name string, early **earlyOpen) (bool, startProgress, error) {
	var prog startProgress
	for {
		select {
		case <-(*early).opened():
			if (*early).conn != nil {
				return true, prog, nil
			}
			// It gave up: ctx ended; the watch ends with it.
			*early = nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, prog, nil
			}
			if ev.Type == watch.Error || ev.Type == watch.Deleted {
				return false, prog, protocol.Errorf(protocol.KindTransient, "pod %s went away while starting", name)
			}
			current, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			done, why, err := startState(current)
			if done || err != nil {
				return done, prog, err
			}
			prog = startProgress{current, why}
			if *early == nil && p.channel && current.Annotations[AnnotationChannel] == channelEscaped && sandboxStarting(current) {
				*early = p.startEarlyOpen(ctx, name)
			}
		}
	}
}

func (p *Provider) startFailed(ctx context.Context, last string, err error) error {
	if context.Cause(ctx) == errPodStartTimeout {
		kind := protocol.KindTransient
		if last != "" && containsAny(last, "Insufficient", "exceeded quota") {
			kind = protocol.KindQuota
		}
		return protocol.Errorf(kind, "sandbox pod not running after %s (the create bound): %s", p.timing.podStart, orUnknown(last))
	}
	if err != nil {
		return err
	}
	return classify(ctx, "pod start", context.Cause(ctx))
}

// imageFailures are waiting reasons after which a container will not start
// without someone fixing the image or the node.
var imageFailures = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

var configFailures = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "PreCreateHookError": true, "PostStartHookError": true}

// startState reads a pod on its way up: done when the sandbox container
// runs; an error when it never will; else why it is still waiting.
func startState(pod *corev1.Pod) (done bool, waiting string, err error) {
	switch {
	case pod.Status.Reason == "DeadlineExceeded" || (pod.Status.Phase == corev1.PodSucceeded && pod.Labels[LabelLifetime] != "0"):
		// Its lifetime ran out already: made, and listed expired.
		return true, "", nil
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		return false, "", protocol.Errorf(protocol.KindTransient, "sandbox pod ended while starting: %s %s", pod.Status.Reason, pod.Status.Message)
	}
	for _, st := range pod.Status.InitContainerStatuses {
		if w := st.State.Waiting; w != nil {
			if imageFailures[w.Reason] {
				return false, "", protocol.Errorf(protocol.KindInvalidRequest, "the keeper image %q is not on the node and cannot be pulled (%s: %s); load it there or set keeper_image", st.Image, w.Reason, w.Message)
			}
			if configFailures[w.Reason] {
				return false, "", protocol.Errorf(protocol.KindInvalidRequest, "keeper init container: %s: %s", w.Reason, w.Message)
			}
			waiting = "keeper: " + w.Reason
		}
		if t := st.State.Terminated; t != nil && t.ExitCode != 0 {
			return false, "", protocol.Errorf(protocol.KindTransient, "keeper install failed: %s (exit %d) %s", t.Reason, t.ExitCode, t.Message)
		}
	}
	for _, st := range pod.Status.ContainerStatuses {
		switch {
		case st.State.Running != nil:
			return true, "", nil
		case st.State.Terminated != nil:
			t := st.State.Terminated
			return false, "", protocol.Errorf(protocol.KindTransient, "sandbox container ended while starting: %s (exit %d) %s", t.Reason, t.ExitCode, t.Message)
		case st.State.Waiting != nil:
			w := st.State.Waiting
			if imageFailures[w.Reason] {
				return false, "", protocol.Errorf(protocol.KindNotFound, "image %q: %s: %s", st.Image, w.Reason, w.Message)
			}
			if configFailures[w.Reason] {
				return false, "", protocol.Errorf(protocol.KindInvalidRequest, "sandbox container: %s: %s", w.Reason, w.Message)
			}
			if w.Reason != "" && w.Reason != "PodInitializing" {
				waiting = w.Reason + ": " + w.Message
			}
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			waiting = c.Reason + ": " + c.Message
		}
	}
	if waiting == "" {
		waiting = string(pod.Status.Phase)
	}
	return false, waiting, nil
}

// removeLeftovers deletes what a failed create made, with a context of its
// own: the create's may be what ended.
func (p *Provider) removeLeftovers(id string, uid types.UID) {
	ctx, cancel := context.WithTimeout(context.Background(), p.timing.api)
	defer cancel()
	cs, _ := p.client()
	if uid != "" {
		_ = cs.CoreV1().Pods(p.namespace).Delete(ctx, id, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0)), Preconditions: &metav1.Preconditions{UID: &uid}})
	}
	_ = cs.NetworkingV1().NetworkPolicies(p.namespace).Delete(ctx, id, metav1.DeleteOptions{})
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}
