package kubernetes

import (
	"context"
	"strconv"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/kubernetes/k8stest"
)

// The API server restarted mid-exec: the exec ends transient (its stream
// went with the server; the keeper kills the tree when its control stream
// ends, or over the channel when the next call takes the channel over or
// the lease of the broken one ends), and once the server is back the next
// call simply works: over the channel, it reconnects.
func TestAPIServerRestartMidExec(t *testing.T) {
	for _, mode := range []string{modeChannel, modeExec} {
		t.Run(mode, func(t *testing.T) { apiServerRestartMidExec(t, mode) })
	}
}

func apiServerRestartMidExec(t *testing.T, mode string) {
	p := newTestProviderMode(t, mode, nil)
	owner := provider.Owner{Key: "resident-install-id", InstallID: "fault-" + newID()[len(idPrefix):]}
	id := createFor(t, p, owner, protocol.Spec{Image: cluster.Image})
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	go drain(proc)
	awaitSleeps(t, p, id, "300", 1, "the exec running")
	if err := k8stest.RestartDaemon("apiserver"); err != nil {
		t.Fatalf("restart the API server: %v", err)
	}
	waited := make(chan error, 1)
	go func() { _, err := proc.Wait(); waited <- err }()
	select {
	case err := <-waited:
		if protocol.KindOf(err) != protocol.KindTransient {
			t.Fatalf("exec across an API server restart: %v (kind %s), want transient", err, protocol.KindOf(err))
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Wait did not return after the API server went away")
	}
	if err := k8stest.AwaitAPIServer(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	// Ready is announced a moment before every route serves: the next
	// call works once the server is back (transient until then), and the
	// interrupted exec's tree is gone.
	awaitSleeps(t, p, id, "300", 0, "after the restart")
}

// The resident gone mid-exec (its connection to the API server dropped, as
// when it is SIGKILLed): the keeper sees its control stream end and kills
// the exec's tree, so nothing of the exec outlives its owner; a new
// resident then finds the sandbox and terminates it (the conformance
// suite's restart case).
func TestConnectionLossKillsTheTree(t *testing.T) {
	p := newTestProviderMode(t, modeExec, nil)
	owner := provider.Owner{Key: "resident-install-id", InstallID: "lost-" + newID()[len(idPrefix):]}
	id := createFor(t, p, owner, protocol.Spec{Image: cluster.Image})
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sh", "-c", "sleep 301 & sleep 302"}})
	if err != nil {
		t.Fatal(err)
	}
	go drain(proc)
	awaitSleeps(t, p, id, "30[12]", 2, "the exec's tree running")
	proc.(*process).abandon() // the connection drops; no kill frame is sent
	awaitSleeps(t, p, id, "30[12]", 0, "the exec's tree after its connection dropped")
}

// awaitSleeps waits until exactly want processes "sleep <secs>" run in the
// sandbox (secs a grep pattern), retrying calls that fail transient.
func awaitSleeps(t *testing.T, p *Provider, id, secs string, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, st, err := run(ctx, p, id, "sh", "-c", "ps -o comm,args | grep -c '^sleep *sleep "+secs+"' || true")
		cancel()
		if err != nil && protocol.KindOf(err) != protocol.KindTransient {
			t.Fatalf("%s: %v", what, err)
		}
		if err == nil && st.Code == 0 && out == strconv.Itoa(want)+"\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: ps counts %q (%+v, %v), want %d", what, out, st, err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The kubelet restarted with a sandbox running: the sandbox goes on (its
// containers are containerd's); an exec's stream, which the kubelet
// proxies, ends with the kubelet, transient, and its keeper kills its tree;
// the next exec works once the kubelet is back.
func TestKubeletRestartKeepsTheSandbox(t *testing.T) {
	p := newTestProvider(t)
	owner := provider.Owner{Key: "resident-install-id", InstallID: "kubelet-" + newID()[len(idPrefix):]}
	id := createFor(t, p, owner, protocol.Spec{Image: cluster.Image})
	if _, _, err := run(context.Background(), p, id, "sh", "-c", "echo kept > /tmp/mark"); err != nil {
		t.Fatal(err)
	}
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sleep", "303"}})
	if err != nil {
		t.Fatal(err)
	}
	go drain(proc)
	awaitSleeps(t, p, id, "303", 1, "the exec running")
	if err := k8stest.RestartDaemon("kubelet"); err != nil {
		t.Fatalf("restart the kubelet: %v", err)
	}
	waited := make(chan error, 1)
	go func() { _, err := proc.Wait(); waited <- err }()
	select {
	case err := <-waited:
		if err != nil && protocol.KindOf(err) != protocol.KindTransient {
			t.Fatalf("the exec across a kubelet restart: %v, want transient", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("Wait did not return after the kubelet restarted")
	}
	awaitSleeps(t, p, id, "303", 0, "after the kubelet restart") // transient until it serves again
	if out, _, err := run(context.Background(), p, id, "cat", "/tmp/mark"); err != nil || out != "kept\n" {
		t.Fatalf("the sandbox after the kubelet restart: %q %v; want the same container", out, err)
	}
	if list, err := p.ListOwned(context.Background(), owner); err != nil || len(list) != 1 || list[0].State != protocol.StateRunning {
		t.Fatalf("after the kubelet restart: %+v %v", list, err)
	}
}

// A pod evicted from under an exec (the Eviction API, as a drain does):
// the exec ends (its stream goes with the container) instead of hanging,
// and the sandbox is gone: not_found.
func TestEvictionUnderAnExec(t *testing.T) {
	p := newTestProvider(t)
	owner := provider.Owner{Key: "resident-install-id", InstallID: "evict-" + newID()[len(idPrefix):]}
	id := createFor(t, p, owner, protocol.Spec{Image: cluster.Image})
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sleep", "304"}})
	if err != nil {
		t.Fatal(err)
	}
	go drain(proc)
	awaitSleeps(t, p, id, "304", 1, "the exec running")
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: testNamespace}}
	if err := admin.CoreV1().Pods(testNamespace).EvictV1(context.Background(), eviction); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _, _ = proc.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
		t.Fatal("Wait did not return after the pod was evicted")
	}
	if _, err := p.ReadOwner(context.Background(), id, owner.Key); protocol.KindOf(err) != protocol.KindNotFound {
		t.Fatalf("ReadOwner of an evicted sandbox: %v, want not_found", err)
	}
}
