package docker

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// stubborn starts a tree that ignores SIGTERM: a plain child, a setsid'd
// one (leaves the process group and session), a double-forked orphan, each
// with a long sleep.
const stubborn = `trap '' TERM
sh -c 'trap "" TERM; sleep 301 & wait' &
setsid sh -c 'trap "" TERM; sleep 302 & wait' &
(sh -c 'sleep 303' &) &
echo started
wait`

// processes lists what runs in the sandbox, from inside it.
func processes(t *testing.T, p *Provider, id string) string {
	return sh(t, p, id, "ps -o pid,ppid,stat,args")
}

func TestTimeoutKillsTheWholeTreeInside(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", stubborn}})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(proc)
	if r.err != nil || r.status.Code != 137 || r.stdout != "started\n" {
		t.Fatalf("timed-out exec: %+v %v, stdout %q", r.status, r.err, r.stdout)
	}
	before := processes(t, p, id)
	if strings.Contains(before, "sleep") {
		t.Fatalf("processes of the killed exec survive:\n%s", before)
	}
	t.Logf("inside the sandbox after the kill:\n%s", before)
}

func TestCancelKillsTheTreeAndKeepsOutput(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", stubborn}})
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(proc.Stdout()).ReadString('\n')
	cancel()
	r := collect(proc)
	if line != "started\n" || r.err != nil || r.status.Code != 137 || r.status.Signal != "SIGKILL" {
		t.Fatalf("cancelled exec: first line %q, %+v %v", line, r.status, r.err)
	}
	if ps := processes(t, p, id); strings.Contains(ps, "sleep") {
		t.Fatalf("processes of the cancelled exec survive:\n%s", ps)
	}
}

// A child that does not read its stdin, and a host pushing stdin: the kill
// frame cannot get through the blocked control stream, so the fallback
// (a second exec running "keeper kill") must.
func TestKillGetsThroughBlockedStdin(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "trap '' TERM; sleep 304"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	blocked := make(chan struct{})
	go func() {
		chunk := make([]byte, 1<<20)
		for i := 0; ; i++ {
			if i == 32 {
				close(blocked) // 32 MiB can only have been taken by buffers if nothing blocked; it will have
			}
			if _, err := proc.Stdin().Write(chunk); err != nil {
				return
			}
		}
	}()
	select {
	case <-blocked:
		t.Fatal("32 MiB of stdin went through to a process that reads none")
	case <-time.After(2 * time.Second):
	}
	start := time.Now()
	cancel()
	r := collect(proc)
	if r.err != nil || r.status.Code != 137 || time.Since(start) > 10*time.Second {
		t.Fatalf("kill with blocked stdin: %+v %v after %s", r.status, r.err, time.Since(start))
	}
	t.Logf("killed through the fallback in %s", time.Since(start).Round(time.Millisecond))
	if ps := processes(t, p, id); strings.Contains(ps, "sleep") {
		t.Fatalf("the exec survives:\n%s", ps)
	}
}

func TestOOMKillIsReported(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{MemoryMB: 32}, nil)
	// tail keeps the last lines; /dev/zero has none, so it keeps it all.
	r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"tail", "/dev/zero"}})
	if r.err != nil || r.status.Code != 137 || !r.status.OOMKilled {
		t.Fatalf("memory hog: %+v %v", r.status, r.err)
	}
	// A plain SIGKILL is not an OOM kill.
	r = run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "kill -9 $$"}})
	if r.status.Code != 137 || r.status.OOMKilled {
		t.Fatalf("kill -9: %+v", r.status)
	}
}

func TestForkBombIsContainedAndKilled(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{PidsLimit: 64}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "b() { b | b & }; b; sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	r := collect(proc)
	if r.err != nil || r.status.Code == 0 {
		t.Fatalf("fork bomb: %+v %v", r.status, r.err)
	}
	var ps string
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"ps", "-o", "pid,args"}})
		ps = res.stdout
		if res.status.Code == 0 && strings.Count(ps, "\n") < 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bomb's processes are still there:\n%s", ps)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("after the bomb:\n%s", ps)
}
