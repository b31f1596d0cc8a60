package external

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

var owner = provider.Owner{Key: "resident-install-id", InstallID: "faults"}

// residentBin builds the real resident once, on first use: the external
// path is tested with real child processes, never an in-process fake (and a
// fuzz worker, which runs TestMain too, builds nothing).
var (
	buildOnce  sync.Once
	binDir     string
	builtBin   string
	buildError error
)

func residentBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildError = os.MkdirTemp("", "resident-external-test")
		if buildError != nil {
			return
		}
		builtBin = filepath.Join(binDir, "resident")
		out, err := exec.Command("go", "build", "-o", builtBin, "github.com/resident-dev/resident/cmd/resident").CombinedOutput()
		if err != nil {
			buildError = fmt.Errorf("build resident: %v\n%s", err, out)
		}
	})
	if buildError != nil {
		t.Fatal(buildError)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	runFakeIfAsked()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// openFake starts the test binary as a provider with one fault.
func openFake(t *testing.T, mode string, timeout time.Duration, log *zap.Logger) (provider.Provider, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeEnv, mode)
	t.Setenv("RESIDENT_EXTERNAL_FAKE_STATE", t.TempDir())
	if log == nil {
		log = zaptest.NewLogger(t)
	}
	p, err := New(provider.Config{Args: []string{self, "-test.run=^$"}, Logger: log,
		Options: provider.NewOptions(map[string]string{CallTimeoutOption.Name: timeout.String()})})
	if err == nil {
		t.Cleanup(func() { _ = p.Close() })
	}
	return p, err
}

func bg(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestProviderExitingAtStartIsAClearError(t *testing.T) {
	_, err := openFake(t, "exit-at-start", 10*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "exit") {
		t.Fatalf("New = %v, want an error saying the provider exited", err)
	}
}

func TestJunkOnStdoutNamesTheProvider(t *testing.T) {
	_, err := openFake(t, "junk-at-start", 10*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "stdout") {
		t.Fatalf("New = %v, want an error naming stdout", err)
	}
}

func TestJunkMidSessionRestartsAndTheSessionGoesOn(t *testing.T) {
	p, err := openFake(t, "junk-mid-session", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(bg(t), protocol.Spec{}, owner, nil); protocol.KindOf(err) != protocol.KindTransient {
		t.Fatalf("create on a provider that then wrote junk: %v, want transient", err)
	}
	if _, err := p.ListOwned(bg(t), owner); err != nil {
		t.Fatalf("the next call, on a restarted provider: %v", err)
	}
}

func TestAHungCallIsKilledAtItsDeadlineAndRestarted(t *testing.T) {
	p, err := openFake(t, "hang-create", 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(bg(t), protocol.Spec{}, owner, nil)
	if protocol.KindOf(err) != protocol.KindTransient || !strings.Contains(err.Error(), "restarted") {
		t.Fatalf("hung create: %v, want transient saying it was restarted", err)
	}
	if _, err := p.ListOwned(bg(t), owner); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
}

func TestAProviderThatStopsReadingStdinCannotHangACall(t *testing.T) {
	p, err := openFake(t, "deaf", 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(bg(t), protocol.Spec{}, owner, nil); protocol.KindOf(err) != protocol.KindTransient {
		t.Fatalf("create: %v, want transient", err)
	}
}

func TestUnknownErrorKindIsTransient(t *testing.T) {
	p, err := openFake(t, "unknown-kind", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Create(bg(t), protocol.Spec{}, owner, nil)
	if protocol.KindOf(err) != protocol.KindTransient || !strings.Contains(err.Error(), "on fire") {
		t.Fatalf("create: %v, want transient with the provider's message", err)
	}
}

func TestFloodedStderrIsDrainedAndLogged(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	p, err := openFake(t, "flood-stderr", 10*time.Second, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := p.ListOwned(bg(t), owner); err != nil {
			t.Fatal(err)
		}
	}
	if logs.FilterMessage("provider stderr").Len() == 0 {
		t.Fatal("no stderr line reached the log")
	}
}

func TestProviderKilledMidExecEndsTheExecAndTheSessionGoesOn(t *testing.T) {
	p, err := openFake(t, "none", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := bg(t)
	id, err := p.Create(ctx, protocol.Spec{}, owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo up; exec sleep 100"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(proc.Stdout(), make([]byte, 3)); err != nil {
		t.Fatal(err)
	}
	ext := p.(*Provider)
	ext.mu.Lock()
	pid := ext.child.cmd.Process.Pid
	ext.mu.Unlock()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := proc.Wait(); protocol.KindOf(err) != protocol.KindTransient {
		t.Fatalf("Wait after the provider died: %v, want transient", err)
	}
	if _, err := p.Terminate(ctx, id); err != nil {
		t.Fatalf("terminate on the restarted provider: %v", err)
	}
}

// TestHostDeathLeavesNoProviderBehind kills a real resident running an
// external provider; the provider (its own process group) must go too.
func TestHostDeathLeavesNoProviderBehind(t *testing.T) {
	bin := residentBin(t)
	res := exec.Command(bin, "--provider", "external", "--", bin, "--serve-provider", "local", "--state-dir", t.TempDir())
	stdin, err := res.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := res.Start(); err != nil {
		t.Fatal(err)
	}
	child := awaitChild(t, res.Process.Pid)
	_ = res.Process.Kill()
	_ = res.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("provider %d outlived its resident", child)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func awaitChild(t *testing.T, parent int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		procs, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, stat := range procs {
			data, err := os.ReadFile(stat)
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...: comm may hold spaces, so split after ")".
			rest := string(data[strings.LastIndexByte(string(data), ')')+1:])
			if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(parent) {
				pid, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(stat, "/proc/"), "/")[0])
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the resident started no provider")
	return 0
}

func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// A zombie has exited; only its parent's wait is missing.
	fields := strings.Fields(string(data))
	return len(fields) > 2 && fields[2] != "Z"
}
