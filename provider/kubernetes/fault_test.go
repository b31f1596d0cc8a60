package kubernetes

import (
	"context"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/kubernetes/k8stest"
)

// The API server restarted mid-exec: the exec ends transient (its stream
// went with the server; the keeper kills the tree when its control stream
// ends), and once the server is back the next call simply works.
func TestAPIServerRestartMidExec(t *testing.T) {
	p := newTestProvider(t)
	owner := provider.Owner{Key: "resident-install-id", InstallID: "fault-" + newID()[len(idPrefix):]}
	id := createFor(t, p, owner, protocol.Spec{Image: cluster.Image})
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	go drain(proc)
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
	// call works once the server is back, and the interrupted exec's tree
	// is gone (the provider kills it when it can reach it again).
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, st, err := run(ctx, p, id, "sh", "-c", "echo back; ps | grep -c '[s]leep 300' || true")
		cancel()
		switch {
		case err != nil && protocol.KindOf(err) != protocol.KindTransient:
			t.Fatalf("the call after the restart: %v", err)
		case err == nil && st.Code == 0 && out == "back\n0\n":
			return
		case time.Now().After(deadline):
			t.Fatalf("after the restart: %q %+v %v; want the call to work and the interrupted exec gone", out, st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

