package kubernetes

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/resident-dev/resident/internal/keeper/channel"
)

// earlyOpen opens a new channel pod's keeper channel while create waits,
// before the pod's status says the sandbox container runs: the kubelet
// reports a container running only at its next relist of the runtime
// (PLEG, every second), but serves an attach as soon as the runtime runs
// the container (it asks the runtime, not its cache). The keeper's
// Welcome is then the sign the sandbox is ready, and the first exec finds
// the channel held.
//
// It starts when the watch shows the sandbox container starting
// (sandboxStarting) and attaches again, 20 ms apart and then 50 ms for
// two seconds, 500 ms after that (a refused attach is one short request
// to the API server and the kubelet; a container usually runs within a
// second of the sign, and one whose image is still being pulled should
// not cost a request every 50 ms), until the keeper welcomes it or ctx
// ends. An attach before the container runs fails at
// the kubelet at once ("container not found"); nothing runs twice.
type earlyOpen struct {
	done   chan struct{} // closed when it opened the channel or gave up
	conn   *channel.Conn
	rw     *attachStream
	last   atomic.Bool // stop after the attempt under way
	cancel context.CancelFunc
}

func (p *Provider) startEarlyOpen(ctx context.Context, id string) *earlyOpen {
	ctx, cancel := context.WithCancel(ctx)
	e := &earlyOpen{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(e.done)
		wait := 20 * time.Millisecond
		started := time.Now()
		for {
			if rw, err := p.attach(id, true); err == nil { // this resident's pod: channelEscaped
				conn, err := channel.Open(ctx, rw, channel.Options{Logger: p.log.Named("channel"), Seal: true})
				if err == nil {
					e.conn, e.rw = conn, rw
					return
				}
				_ = rw.Close()
			}
			if e.last.Load() {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 50*time.Millisecond)
			if time.Since(started) > 2*time.Second {
				wait = 500 * time.Millisecond
			}
		}
	}()
	return e
}

// opened is closed once the opener is done (nil for no opener: never).
func (e *earlyOpen) opened() <-chan struct{} {
	if e == nil {
		return nil
	}
	return e.done
}

// finish lets the attempt under way end and returns what it opened (nil:
// the first call opens the channel as usual).
func (e *earlyOpen) finish() (*channel.Conn, *attachStream) {
	if e == nil {
		return nil, nil
	}
	e.last.Store(true)
	<-e.done
	e.cancel()
	return e.conn, e.rw
}

// stop abandons the opener, closing what it opened.
func (e *earlyOpen) stop() {
	if e == nil {
		return
	}
	e.cancel()
	<-e.done
	if e.conn != nil {
		_ = e.conn.Close()
	}
}

// sandboxStarting: the kubelet is starting (or started) the sandbox
// container. With the keeper's init container: it ended well (the kubelet
// starts the next container in the same sync). Without one
// (keeper_host_dir): the pod's sandbox and network are ready, which the
// kubelet reports in the sync that starts the container.
func sandboxStarting(pod *corev1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return pod.Status.PodIP != ""
	}
	for _, st := range pod.Status.InitContainerStatuses {
		if st.Name == containerKeeper && st.State.Terminated != nil && st.State.Terminated.ExitCode == 0 {
			return true
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodInitialized && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
