package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// A pod on its way up is read as done, failed (with a kind) or waiting.
func TestStartState(t *testing.T) {
	waiting := func(reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: containerSandbox, Image: "img", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	cases := []struct {
		name     string
		status   corev1.PodStatus
		done     bool
		wantKind protocol.Kind
	}{
		{"running", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: containerSandbox, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}, true, ""},
		{"pull backoff", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("ImagePullBackOff")}}, false, protocol.KindNotFound},
		{"pull error", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("ErrImagePull")}}, false, protocol.KindNotFound},
		{"config error", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("CreateContainerConfigError")}}, false, protocol.KindInvalidRequest},
		{"keeper image missing", corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{waiting("ErrImageNeverPull")}}, false, protocol.KindInvalidRequest},
		{"still creating", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("ContainerCreating")}}, false, ""},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes: Insufficient cpu"}}}, false, ""},
		{"expired while starting", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded"}, true, ""},
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}, false, protocol.KindTransient},
	}
	for _, c := range cases {
		pod := &corev1.Pod{Status: c.status}
		pod.Labels = map[string]string{LabelLifetime: "0"}
		done, _, err := startState(pod)
		if done != c.done || (c.wantKind == "") != (err == nil) || (err != nil && protocol.KindOf(err) != c.wantKind) {
			t.Errorf("%s: done=%v err=%v (kind %s), want done=%v kind %q", c.name, done, err, protocol.KindOf(err), c.done, c.wantKind)
		}
	}
}

// Tags must be labels; the owner tag is merged last; our namespace is ours.
func TestSandboxLabels(t *testing.T) {
	owner := provider.Owner{Key: "resident-install-id", InstallID: "abc"}
	labels, keys, err := sandboxLabels(protocol.Spec{LifetimeS: 5}, owner, map[string]string{"team": "evals", "example.com/run": "r-1"})
	if err != nil {
		t.Fatal(err)
	}
	if labels[owner.Key] != "abc" || labels["team"] != "evals" || labels[LabelLifetime] != "5" || keys != `["example.com/run","resident-install-id","team"]` {
		t.Fatalf("labels %v keys %s", labels, keys)
	}
	for _, tags := range []map[string]string{{"has space": "x"}, {"k": "a value with spaces"}, {"other-install-id": "x"}, {"dev.resident.role": "x"}} {
		if _, _, err := sandboxLabels(protocol.Spec{}, owner, tags); protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Errorf("tags %v: %v, want invalid_request", tags, err)
		}
	}
	if !validID(newID()) || validID("resident-xyz") || validID("other-0123456789abcdef0123") {
		t.Error("validID")
	}
}
