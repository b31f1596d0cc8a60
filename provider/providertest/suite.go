package providertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Harness is what a provider gives the suite.
type Harness struct {
	// New returns a fresh provider on the backend under test, closed by the
	// harness in t.Cleanup. Every call must reach the same backend (same
	// state dir, same daemon): a second call is how the suite plays a
	// restarted resident.
	New func(t *testing.T) provider.Provider
	// Image is an image the provider can run with a POSIX sh and cat, env,
	// grep, ln, ls, mkdir, printf, pwd, sleep, stat -c, true and dirname
	// (busybox will do; setsid is used when present). Providers that ignore
	// images may leave it empty.
	Image string
	// Volume seeds a store volume owned by owner, as if a sandbox/create of
	// owner had made it, with files (path -> content; parents are created).
	// Nil when the provider has no store.
	Volume func(t *testing.T, owner provider.Owner, name string, files map[string]string)
	// ForeignVolume seeds a volume the resident did not create (no owner
	// tag), as an operator or another tool would, with files.
	ForeignVolume func(t *testing.T, name string, files map[string]string)
	// NewWith is New with the provider.Config that adjust changes (the
	// operator's volume grants, say). Nil skips the cases that need it.
	NewWith func(t *testing.T, adjust func(*provider.Config)) provider.Provider
	// Plant makes a running sandbox whose host-visible tags are exactly
	// tags, written to the backend directly, past Create's checks (as
	// another tool or an older resident might have left one), and removes
	// it at the test's end. Nil skips the cases that need it.
	Plant func(t *testing.T, tags map[string]string) (sandboxID string)
	// Isolated says the provider promises that no exec can see the test's
	// own process (a pid namespace or container of its own) and that it
	// honours exclusive execs: the hostile cases then fail instead of
	// skipping where an exec could.
	Isolated bool
	// StartFailuresExit says the backend cannot tell a start failure from
	// the command's own end and reports it as a shell does, exit 127 for a
	// missing program and 126 for one that cannot run (the Python Docker
	// shim, through docker-py's exec): start_reasons then checks the codes.
	StartFailuresExit bool
}

// OwnerKey is the owner tag key the suite uses, as the resident builds it
// from the default tag prefix.
const OwnerKey = "resident-install-id"

// Run runs every conformance test against the provider h builds.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("providertest: Harness.New is required")
	}
	t.Run("lifecycle", func(t *testing.T) { runLifecycle(t, h) })
	t.Run("exec", func(t *testing.T) { runExec(t, h) })
	t.Run("start_reasons", func(t *testing.T) { runStartReasons(t, h) })
	t.Run("unannounced", func(t *testing.T) { runUnannounced(t, h) })
	t.Run("kill", func(t *testing.T) { runKill(t, h) })
	t.Run("write_file", func(t *testing.T) { runWriteFile(t, h) })
	t.Run("store", func(t *testing.T) { runStore(t, h) })
	t.Run("sandbox_files", func(t *testing.T) { runSandboxFiles(t, h) })
	t.Run("upload", func(t *testing.T) { runUpload(t, h) })
	t.Run("volume_admin", func(t *testing.T) { runVolumeAdmin(t, h) })
	t.Run("selfcheck_files", func(t *testing.T) { runSelfCheckFiles(t, h) })
	t.Run("hostile", func(t *testing.T) { runHostile(t, h) })
	t.Run("selfcheck_exec", func(t *testing.T) { runSelfCheckExec(t, h) })
	t.Run("detach", func(t *testing.T) { runDetach(t, h) })
	t.Run("pool", func(t *testing.T) { runPool(t, h) })
	t.Run("snapshot", func(t *testing.T) { runSnapshot(t, h) })
	t.Run("image_build", func(t *testing.T) { runBuild(t, h) })
	t.Run("net", func(t *testing.T) { runNet(t, h) })
}

// RunNet runs only the net cases (Run's "net"): for a provider that has
// more than one way to carry connections, each way under the same cases.
func RunNet(t *testing.T, h Harness) { runNet(t, h) }

// awaitTimeout bounds every wait. It is generous on purpose: the suite
// checks that things happen, never how fast, and CI machines are noisy.
const awaitTimeout = 60 * time.Second

// env is one test's view: a provider and an install of its own, so tests
// sharing a backend never see each other's sandboxes.
type env struct {
	t     *testing.T
	h     Harness
	p     provider.Provider
	owner provider.Owner
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	return &env{t: t, h: h, p: h.New(t), owner: provider.Owner{Key: OwnerKey, InstallID: uniqueName("install")}}
}

// uniqueName makes install ids and volume names distinct across runs on a
// shared backend.
func uniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// MadeBySuite says an install id (or any name) ends as the suite's own
// do: every owner it makes ends in uniqueName's random suffix. A cleanup
// after the suite removes what such owners hold and nothing of the other
// tests sharing its backend.
func MadeBySuite(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i < 0 || len(name)-i-1 != 12 {
		return false
	}
	_, err := hex.DecodeString(name[i+1:])
	return err == nil
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*awaitTimeout)
	t.Cleanup(cancel)
	return c
}

// create makes a sandbox and registers its termination right away, so a
// failing test leaves nothing behind.
func (e *env) create(spec protocol.Spec, tags map[string]string) string {
	e.t.Helper()
	return createAs(e.t, e.p, e.h, e.owner, spec, tags)
}

func createAs(t *testing.T, p provider.Provider, h Harness, owner provider.Owner, spec protocol.Spec, tags map[string]string) string {
	t.Helper()
	if spec.Image == "" {
		spec.Image = h.Image
	}
	id, err := p.Create(ctx(t), spec, owner, tags)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if id == "" {
		t.Fatal("Create returned an empty id")
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), awaitTimeout)
		defer cancel()
		if _, err := p.Terminate(c, id); err != nil {
			t.Errorf("cleanup Terminate(%s): %v", id, err)
		}
	})
	return id
}

// await polls cond until it holds or awaitTimeout passes.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(awaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting (%s) for: %s", awaitTimeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func wantKind(t *testing.T, what string, err error, kinds ...protocol.Kind) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error, want kind %v", what, kinds)
	}
	if k := protocol.KindOf(err); !slices.Contains(kinds, k) {
		t.Fatalf("%s: error %q has kind %s, want %v", what, err, k, kinds)
	}
}

// buffer collects a stream while it is still being written.
type buffer struct {
	mu   sync.Mutex
	data []byte
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = append(b.data, p...)
	return len(p), nil
}

func (b *buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.data)
}

func (b *buffer) String() string { return string(b.Bytes()) }

func lines(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == '\n' })
}

var errWaitStuck = errors.New("Wait did not return")
