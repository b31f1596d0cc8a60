package resident

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// fakeProxy stands in for the keeper's proxy inside a relayFake sandbox:
// the test asks it to request a dial (as a client of the sandbox would
// make it), and reads the verdicts and attaches the resident answers with.
type fakeProxy struct {
	events   *io.PipeWriter // the proxy's stdout
	verdicts *bufio.Reader  // the proxy's stdin
	attaches chan *fakeAttach
	done     chan struct{}
	spec     protocol.Spec // what the provider was asked to create
}

// fakeAttach is an attach exec: what the resident sends up arrives on
// fromResident; toResident's bytes go back down.
type fakeAttach struct {
	id           string
	fromResident *io.PipeReader
	toResident   *io.PipeWriter
	stdin        *io.PipeWriter
	done         chan struct{}
}

type egressFake struct {
	*relayFake
	mu    sync.Mutex
	proxy *fakeProxy
}

func (f *egressFake) Create(ctx context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string) (string, error) {
	f.mu.Lock()
	f.proxy = &fakeProxy{attaches: make(chan *fakeAttach, 4), done: make(chan struct{}), spec: spec}
	f.mu.Unlock()
	return f.relayFake.Create(ctx, spec, owner, tags)
}

func (f *egressFake) Exec(ctx context.Context, id string, req provider.ExecRequest) (provider.Process, error) {
	f.mu.Lock()
	px := f.proxy
	f.mu.Unlock()
	switch req.Argv[0] {
	case "proxy":
		stdout, events := io.Pipe()
		verdicts, stdin := io.Pipe()
		px.events, px.verdicts = events, bufio.NewReader(verdicts)
		go func() { _, _ = io.WriteString(events, `{"ready":true}`+"\n") }()
		context.AfterFunc(ctx, func() { _ = events.Close(); _ = verdicts.Close() })
		return &pipeProcess{stdout: stdout, stdin: stdin, done: px.done, onWait: func() { <-ctx.Done() }}, nil
	case "attach":
		a := &fakeAttach{id: req.Argv[1], done: make(chan struct{})}
		var in *io.PipeReader
		in, a.stdin = io.Pipe()
		a.fromResident = in
		stdout, toResident := io.Pipe()
		a.toResident = toResident
		context.AfterFunc(ctx, func() { _ = in.Close(); _ = toResident.Close() })
		px.attaches <- a
		return &pipeProcess{stdout: stdout, stdin: a.stdin, done: a.done}, nil
	}
	return f.relayFake.Exec(ctx, id, req)
}

// pipeProcess is an exec made of pipes; Wait returns once stdout is read
// to its end (and onWait, if set, returns).
type pipeProcess struct {
	stdout *io.PipeReader
	stdin  *io.PipeWriter
	done   chan struct{}
	once   sync.Once
	onWait func()
}

func (p *pipeProcess) Stdout() io.Reader     { return p.stdout }
func (p *pipeProcess) Stderr() io.Reader     { return eofReader{} }
func (p *pipeProcess) Stdin() io.WriteCloser { return p.stdin }
func (p *pipeProcess) Wait() (provider.ExitStatus, error) {
	if p.onWait != nil {
		p.onWait()
	}
	p.once.Do(func() { close(p.done) })
	return provider.ExitStatus{}, nil
}

func (px *fakeProxy) ask(t *testing.T, id, host string, port int) {
	t.Helper()
	line, _ := json.Marshal(provider.ProxyEvent{ID: id, Host: host, Port: port})
	if _, err := px.events.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}

func TestEgressDialsWhatTheRulesAllowAndRefusesTheRest(t *testing.T) {
	upstream, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer upstream.Close()
	served := make(chan string, 1)
	go func() {
		c, err := upstream.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		got := make([]byte, 4) // answers without waiting for the end, as HTTP does
		_, _ = io.ReadFull(c, got)
		served <- string(got)
		_, _ = io.WriteString(c, "pong")
	}()
	allowed := upstream.Addr().String()

	prov := &egressFake{relayFake: newRelayFake()}
	h := startHost(t, prov)
	h.initialize(nil)
	var created protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"env": map[string]string{"KEEP": "1"},
		"egress": map[string]any{"allow": []string{allowed}}}}, &created)
	px := prov.proxy
	if px.spec.Network != "none" || px.spec.Egress != nil || px.spec.Env["HTTPS_PROXY"] != "http://127.0.0.1:3128" || px.spec.Env["KEEP"] != "1" {
		t.Fatalf("the provider was asked for %+v", px.spec)
	}

	px.ask(t, "c1", "127.0.0.1", 9) // no rule
	line, err := px.verdicts.ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":"c1"`) || !strings.Contains(line, "not in spec.egress.allow") {
		t.Fatalf("verdict %q (%v)", line, err)
	}
	if !strings.Contains(h.logs.String(), "egress refused") {
		t.Fatal("the refusal is not logged")
	}

	host, port, _ := net.SplitHostPort(allowed)
	var portN int
	for _, c := range port {
		portN = portN*10 + int(c-'0')
	}
	px.ask(t, "c2", host, portN)
	a := <-px.attaches
	if a.id != "c2" {
		t.Fatalf("attach for %q", a.id)
	}
	// The client sends and half-closes, then reads the answer: the
	// attach's stdout ends only after its stdin has (keeper attach waits
	// for both), which the fake plays by closing it last.
	_, _ = io.WriteString(a.toResident, "ping")
	go func() {
		back, _ := io.ReadAll(a.fromResident)
		served <- string(back)
		_ = a.toResident.Close()
	}()
	if got := <-served; got != "ping" {
		t.Fatalf("upstream read %q", got)
	}
	if back := <-served; back != "pong" {
		t.Fatalf("the sandbox side read %q", back)
	}
	h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": created.SandboxID}, nil)
	<-px.done // terminate ends the proxy
}
