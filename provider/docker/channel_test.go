package docker

import (
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// A channel-mode sandbox: the keeper is PID 1 serving its stdio, no
// docker-init, no logs, stdin open, and the mode recorded in a label.
func TestChannelSandboxIsMadeForTheChannel(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{LifetimeS: 600}, nil)
	res, err := p.cli.ContainerInspect(testCtx(t), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Container
	want := []string{keeperproto.Path, keeperproto.CmdServe, "-stdio", "-lifetime", "600"}
	if strings.Join(c.Config.Entrypoint, " ") != strings.Join(want, " ") {
		t.Errorf("entrypoint %q; want %q", c.Config.Entrypoint, want)
	}
	if c.HostConfig.Init == nil || *c.HostConfig.Init {
		t.Errorf("init %v; want the keeper as PID 1, without docker-init", c.HostConfig.Init)
	}
	if c.HostConfig.LogConfig.Type != "none" {
		t.Errorf("log driver %q: the attach stream must never reach the engine's logs", c.HostConfig.LogConfig.Type)
	}
	if !c.Config.OpenStdin || c.Config.StdinOnce {
		t.Errorf("stdin open %v once %v; want open for every holder", c.Config.OpenStdin, c.Config.StdinOnce)
	}
	if c.Config.Labels[LabelExecMode] != ExecModeChannel {
		t.Errorf("exec mode label %q", c.Config.Labels[LabelExecMode])
	}
	if got := sh(t, p, id, "cat /proc/1/cmdline | tr '\\0' ' '"); !strings.HasPrefix(got, keeperproto.Path+" serve") {
		t.Errorf("pid 1 is %q", got)
	}
	if info := p.Info(); !info.Capabilities.Detach || !info.Capabilities.ExecUser || !info.Capabilities.TTY || info.DetachedBufferBytes <= 0 {
		t.Errorf("the channel's capabilities are not announced: %+v", info.Capabilities)
	}
}

// exec=exec makes sandboxes as before (docker-init, keeper alive); such a
// sandbox, or one an older resident made, keeps the docker exec path under
// any resident, and refuses by name what only the channel gives.
func TestExecModeSandboxKeepsTheExecPath(t *testing.T) {
	old, _ := newTestProviderWith(t, func(cfg *provider.Config) {
		cfg.Options = provider.NewOptions(map[string]string{OptExec.Name: ExecModeExec})
	})
	if c := old.Info().Capabilities; c.Detach || c.ExecUser || c.TTY {
		t.Errorf("exec=exec announces channel capabilities: %+v", c)
	}
	id := create(t, old, testOwner(t), protocol.Spec{}, nil)
	p, _ := newTestProvider(t)
	if got := sh(t, p, id, "cat /proc/1/cmdline | tr '\\0' ' '"); strings.Contains(got, "serve") {
		t.Errorf("pid 1 of an exec-mode sandbox is %q", got)
	}
	if got := sh(t, p, id, "echo fine"); got != "fine\n" {
		t.Errorf("exec on the exec path: %q", got)
	}
	for name, req := range map[string]provider.ExecRequest{
		"user": {Argv: []string{"true"}, User: "nobody"},
		"tty":  {Argv: []string{"true"}, TTY: &protocol.WindowSize{Rows: 2, Cols: 2}},
	} {
		if _, err := p.Exec(testCtx(t), id, req); protocol.KindOf(err) != protocol.KindInvalidRequest || !strings.Contains(err.Error(), "docker exec") {
			t.Errorf("%s on the exec path: %v; want invalid_request naming docker exec", name, err)
		}
	}
	if err := p.StartDetached(testCtx(t), id, provider.ExecRequest{Argv: []string{"true"}, ID: "d"}); protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Errorf("detach on the exec path: %v; want invalid_request", err)
	}
}

// Users are the keeper's: resolved in the sandbox's /etc/passwd, every
// capability dropped; spec.user is the default for execs and files.
func TestChannelExecAsUser(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	for _, user := range []string{"nobody", "65534", "65534:65534"} {
		r := run(t, testCtx(t), p, id, provider.ExecRequest{Argv: []string{"sh", "-c", "id -u; id -g; grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status | tr -s '\\t' ' '"}, User: user})
		want := "65534\n65534\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\nNoNewPrivs: 1\n"
		if r.err != nil || r.status.Code != 0 || r.stdout != want {
			t.Errorf("user %q: %+v %v %q; want %q", user, r.status, r.err, r.stdout, want)
		}
	}
	_, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"true"}, User: "no-such-user"})
	if protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Errorf("unknown user: %v; want invalid_request", err)
	}

	nb := create(t, p, testOwner(t), protocol.Spec{User: "nobody"}, nil)
	must(t, p.WriteFile(testCtx(t), nb, "/tmp/by-nobody", []byte("x"), nil))
	if got := sh(t, p, nb, "id -u; stat -c %u /tmp/by-nobody"); got != "65534\n65534\n" {
		t.Errorf("spec.user nobody: %q", got)
	}
	if err := p.WriteFile(testCtx(t), nb, "/not-nobodys", []byte("x"), nil); protocol.KindOf(err) != protocol.KindInvalidRequest {
		t.Errorf("write_file as nobody into root's /: %v; want refused", err)
	}
}

func TestChannelTerminalAndResize(t *testing.T) {
	p, _ := newTestProvider(t)
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	proc, err := p.Exec(testCtx(t), id, provider.ExecRequest{Argv: []string{"sh", "-c", "stty size; tty; read line; stty size"}, TTY: &protocol.WindowSize{Rows: 24, Cols: 80}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	out := &lineBuffer{}
	done := make(chan struct{})
	go func() { defer close(done); _, _ = io.Copy(out, proc.Stdout()); out.close() }()
	out.await(t, "/dev/pts/")
	if !strings.HasPrefix(out.String(), "24 80\r\n") {
		t.Errorf("terminal size: %q", out.String())
	}
	rs, ok := proc.(provider.Resizer)
	if !ok {
		t.Fatal("a terminal exec is no Resizer")
	}
	must(t, rs.Resize(protocol.WindowSize{Rows: 40, Cols: 100}))
	_, err = proc.Stdin().Write([]byte("go\n"))
	must(t, err)
	st, err := proc.Wait()
	<-done
	if err != nil || st.Code != 0 || !strings.HasSuffix(out.String(), "40 100\r\n") {
		t.Errorf("after resize: %+v %v, %q", st, err, out.String())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// lineBuffer collects output and lets a test await a piece of it.
type lineBuffer struct {
	mu     sync.Mutex
	b      strings.Builder
	cond   *sync.Cond
	closed bool
}

// close ends every await: no more output comes.
func (l *lineBuffer) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.cond != nil {
		l.cond.Broadcast()
	}
}

func (l *lineBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(b)
	if l.cond != nil {
		l.cond.Broadcast()
	}
	return len(b), nil
}

func (l *lineBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// await blocks until the output holds want (the test's own deadline
// bounds it).
func (l *lineBuffer) await(t *testing.T, want string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cond == nil {
		l.cond = sync.NewCond(&l.mu)
	}
	for !strings.Contains(l.b.String(), want) {
		if l.closed {
			t.Fatalf("output ended without %q: %q", want, l.b.String())
		}
		l.cond.Wait()
	}
}

// A sandbox whose keeper cannot serve the channel (here: a flag it
// refuses, as an image or engine it cannot run in would) is made again on
// the docker exec path, and says so in the log; it works as one.
func TestChannelFallsBackToExec(t *testing.T) {
	p, _ := newTestProvider(t)
	core, logs := observer.New(zap.InfoLevel)
	p.log = zap.New(core)
	p.serveFlags = []string{"-no-such-flag"}
	id := create(t, p, testOwner(t), protocol.Spec{}, nil)
	if mode := inspect(t, p, id).Config.Labels[LabelExecMode]; mode != ExecModeExec {
		t.Fatalf("exec mode after a keeper that could not serve: %q", mode)
	}
	if logs.FilterMessageSnippet("falling back to docker exec").Len() != 1 {
		t.Errorf("the fallback is not in the log: %v", logs.All())
	}
	if got := sh(t, p, id, "echo works"); got != "works\n" {
		t.Errorf("exec after the fallback: %q", got)
	}
}
