package resident

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// fakeProvider is an in-memory provider for the resident's own logic. Exec
// interprets argv: "echo ARGS" writes ARGS to stdout, "err ARGS" to stderr,
// "write N" writes N bytes, "cat" copies stdin, "drain" reads it, "sleep" waits for the
// context, "panic" panics, "fail KIND MSG" returns an error of KIND,
// "slowstart MS CMD..." starts CMD after MS.
type fakeProvider struct {
	mu         sync.Mutex
	boxes      map[string]protocol.Sandbox
	n          int
	unauth     func(string)
	calls      []string
	createErr  error
	authErr    error
	storeFiles map[string]string
	// storeReaders serve paths whose reads misbehave (block, break).
	storeReaders map[string]func() io.ReadCloser
	callTimeout  time.Duration // Info's CallTimeout
}

var (
	_ provider.Provider   = (*fakeProvider)(nil)
	_ provider.Store      = (*fakeProvider)(nil)
	_ provider.FileWriter = (*fakeProvider)(nil)
)

func newFake() *fakeProvider {
	return &fakeProvider{boxes: map[string]protocol.Sandbox{}, storeFiles: map[string]string{}, storeReaders: map[string]func() io.ReadCloser{}}
}

func (f *fakeProvider) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

func (f *fakeProvider) called(call string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.calls, call)
}

func (f *fakeProvider) Info() provider.Info {
	return provider.Info{Name: "fake", Version: "1", Capabilities: protocol.Capabilities{Stdin: true, Store: true, WriteFile: true}, CallTimeout: f.callTimeout}
}

func (f *fakeProvider) Secrets() provider.SecretPolicy {
	return provider.SecretPolicy{
		EnvPrefixes: []string{"FAKE_SECRET_"},
		Tokens: []hardening.TokenPattern{{
			Name: "fake-token", Prefixes: []string{"fk_"}, MaxLen: 40,
			Regexp: mustRegexp(`fk_[a-z0-9]{20}`),
		}},
	}
}

func (f *fakeProvider) ApplyAuth(context.Context, map[string]string) error { return f.authErr }

func (f *fakeProvider) OnUnauthorized(hook func(string)) {
	f.mu.Lock()
	f.unauth = hook
	f.mu.Unlock()
}

func (f *fakeProvider) fireUnauthorized(reason string) {
	f.mu.Lock()
	hook := f.unauth
	f.mu.Unlock()
	hook(reason)
}

func (f *fakeProvider) Create(_ context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string) (string, error) {
	f.record("create")
	if f.createErr != nil {
		return "", f.createErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("fake-%d", f.n)
	all := map[string]string{}
	for k, v := range tags {
		all[k] = v
	}
	all[owner.Key] = owner.InstallID
	f.boxes[id] = protocol.Sandbox{SandboxID: id, Tags: all, CreatedAt: time.Now(), State: protocol.StateRunning, Image: spec.Image}
	return id, nil
}

// plant adds a sandbox owned by someone else.
func (f *fakeProvider) plant(id, ownerKey, owner string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.boxes[id] = protocol.Sandbox{SandboxID: id, Tags: map[string]string{ownerKey: owner}, CreatedAt: time.Now(), State: protocol.StateRunning}
}

// plantTags adds a sandbox with exactly these tags, as a backend might hold
// one that no resident of this version would create.
func (f *fakeProvider) plantTags(id string, tags map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.boxes[id] = protocol.Sandbox{SandboxID: id, Tags: tags, CreatedAt: time.Now(), State: protocol.StateRunning}
}

func (f *fakeProvider) ListOwned(_ context.Context, owner provider.Owner) ([]protocol.Sandbox, error) {
	f.record("list")
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []protocol.Sandbox
	for _, b := range f.boxes {
		if b.Tags[owner.Key] == owner.InstallID {
			out = append(out, b)
		}
	}
	return out, nil
}

func (f *fakeProvider) ReadOwner(_ context.Context, id, ownerKey string) (string, error) {
	f.record("read_owner " + id)
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.boxes[id]
	if !ok {
		return "", protocol.Errorf(protocol.KindNotFound, "sandbox %s not found", id)
	}
	return provider.OwnerOf(b.Tags, ownerKey), nil // as every provider must
}

func (f *fakeProvider) Terminate(_ context.Context, id string) (bool, error) {
	f.record("terminate " + id)
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.boxes[id]
	delete(f.boxes, id)
	return ok, nil
}

func (f *fakeProvider) Close() error { return nil }

func (f *fakeProvider) WriteFile(_ context.Context, id, path string, data []byte, _ *uint32) error {
	f.record("write " + id + " " + path)
	return nil
}

// The store calls record whose they were: "store OP KEY=ID".
func (f *fakeProvider) ListVolumes(_ context.Context, owner provider.Owner) ([]protocol.Volume, error) {
	f.record("store list_volumes " + owner.Key + "=" + owner.InstallID)
	return []protocol.Volume{{Name: "vol"}}, nil
}

func (f *fakeProvider) ListDir(_ context.Context, owner provider.Owner, root, path string, limit int) ([]protocol.DirEntry, bool, error) {
	f.record("store list_dir " + owner.Key + "=" + owner.InstallID)
	if strings.Contains(path, "..") {
		return nil, false, protocol.Errorf(protocol.KindInvalidRequest, "path escapes the volume")
	}
	return []protocol.DirEntry{{Name: "a", Type: protocol.EntryFile}}, false, nil
}

func (f *fakeProvider) ReadFile(_ context.Context, owner provider.Owner, root, path string) (io.ReadCloser, error) {
	f.record("store read_file " + owner.Key + "=" + owner.InstallID)
	if open, ok := f.storeReaders[path]; ok {
		return open(), nil
	}
	content, ok := f.storeFiles[path]
	if !ok {
		return nil, protocol.Errorf(protocol.KindNotFound, "%s not found", path)
	}
	return io.NopCloser(strings.NewReader(content)), nil
}

func (f *fakeProvider) Exec(ctx context.Context, id string, req provider.ExecRequest) (provider.Process, error) {
	f.record("exec " + strings.Join(req.Argv, " "))
	p := &fakeProcess{done: make(chan struct{})}
	var outW, errW *io.PipeWriter
	p.stdout, outW = io.Pipe()
	p.stderr, errW = io.Pipe()
	var inR *io.PipeReader
	if req.Stdin {
		inR, p.stdin = io.Pipe()
	}
	args := req.Argv[1:]
	if req.Argv[0] == "slowstart" { // slowstart MS CMD...: a start that takes MS, as a busy engine's
		var ms int
		fmt.Sscan(args[0], &ms)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		f.record(fmt.Sprintf("deadline set %v", !req.Deadline.IsZero()))
		req.Argv, args = args[1:], args[2:]
	}
	switch req.Argv[0] {
	case "panic": // panic [VALUE]: the value is what the panic carries
		if len(args) > 0 {
			panic(errors.New(strings.Join(args, " ")))
		}
		panic("fake provider panic")
	case "fail":
		return nil, &protocol.Error{Kind: protocol.Kind(args[0]), Msg: strings.Join(args[1:], " ")}
	case "wrapped": // wrapped WHAT MSG: a kindless error wrapped with %w
		return nil, fmt.Errorf("exec %s: %w", args[0], errors.New(strings.Join(args[1:], " ")))
	case "plainerr":
		return nil, errors.New(strings.Join(args, " "))
	}
	go func() {
		defer close(p.done)
		defer outW.Close()
		defer errW.Close()
		switch req.Argv[0] {
		case "echo":
			_, _ = io.WriteString(outW, strings.Join(args, " "))
		case "err":
			_, _ = io.WriteString(errW, strings.Join(args, " "))
		case "bytes": // each argument is one write
			for _, a := range args {
				_, _ = io.WriteString(outW, a)
			}
		case "write":
			var n int
			fmt.Sscan(args[0], &n)
			_, _ = outW.Write(make([]byte, n))
		case "binary":
			for i := range 256 {
				_, _ = outW.Write([]byte{byte(i)})
			}
		case "cat":
			_, _ = io.Copy(outW, inR)
		case "drain": // reads stdin to its end and says nothing
			_, _ = io.Copy(io.Discard, inR)
		case "env":
			for k, v := range req.Env {
				fmt.Fprintf(outW, "%s=%s\n", k, v)
			}
		case "sleep":
			<-ctx.Done()
			p.status = provider.ExitStatus{Code: 137, Signal: "SIGKILL"}
			return
		case "exit":
			fmt.Sscan(args[0], &p.status.Code)
		case "exclusive": // reports the flag, then ends as evicted if asked
			fmt.Fprintf(outW, "exclusive=%v", req.Exclusive)
			if len(args) > 0 && args[0] == "evicted" {
				p.status = provider.ExitStatus{Code: 137, Signal: "SIGKILL", Killed: true}
			}
		}
	}()
	return p, nil
}

type fakeProcess struct {
	stdout, stderr *io.PipeReader
	stdin          *io.PipeWriter
	done           chan struct{}
	status         provider.ExitStatus
}

func (p *fakeProcess) Stdout() io.Reader { return p.stdout }
func (p *fakeProcess) Stderr() io.Reader { return p.stderr }
func (p *fakeProcess) Stdin() io.WriteCloser {
	if p.stdin == nil {
		return nil
	}
	return p.stdin
}
func (p *fakeProcess) Wait() (provider.ExitStatus, error) {
	<-p.done
	return p.status, nil
}

// providerOnly exposes only provider.Provider, not the optional interfaces.
type providerOnly struct{ provider.Provider }
