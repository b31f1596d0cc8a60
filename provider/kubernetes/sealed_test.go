package kubernetes

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// The channel's keeper-to-resident direction is the sandbox container's
// stdout, which the container runtime writes to the node's pod log. A
// canary in an exec's stdout and stderr, in the pod's environment (the
// keeper's Welcome tells it) and in a file written and read back over the
// channel is in neither the pod's log through the API (GetLogs) nor the
// node's files under the kubelet's pod log directory: what they hold is
// sealed frames, a second holder's (a reopen) included.
func TestChannelPodLogHoldsOnlyCiphertext(t *testing.T) {
	const canary = "CANARY-5eaf00d-pod-log"
	p := newTestProvider(t)
	id := createFor(t, p, testOwner("sealed"), protocol.Spec{Image: cluster.Image, Env: map[string]string{"POD_SECRET": canary}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proc, err := p.Exec(ctx, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo $POD_SECRET; echo " + canary + " >&2; echo " + canary + " > /tmp/out"}})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&stderr, proc.Stderr()); close(done) }()
	_, _ = io.Copy(&stdout, proc.Stdout())
	<-done
	if st, err := proc.Wait(); err != nil || st.Code != 0 || stdout.String() != canary+"\n" || stderr.String() != canary+"\n" {
		t.Fatalf("exec: %q %q %+v %v", stdout.String(), stderr.String(), st, err)
	}
	body := strings.Repeat(canary+"\n", 4000) // several frames each way
	if err := p.WriteFile(ctx, id, "/tmp/"+canary, []byte(body), nil); err != nil {
		t.Fatal(err)
	}
	rc, err := p.ReadSandboxFile(ctx, id, "/tmp/"+canary)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != body {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	if pc, ok, err := p.channelFor(ctx, id); err != nil || !ok || !pc.conn.Sealed() {
		t.Fatalf("the pod's channel: ok %v, err %v", ok, err)
	}
	// A reopen (a new resident, a broken stream): a new key, still sealed.
	_ = heldStream(t, p, id).Close()
	if out, st, err := run(ctx, p, id, "cat", "/tmp/out"); err != nil || st.Code != 0 || out != canary+"\n" {
		t.Fatalf("after a reopen: %q %+v %v", out, st, err)
	}

	logs, err := admin.CoreV1().Pods(testNamespace).GetLogs(id, &corev1.PodLogOptions{Container: containerSandbox}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertSealedLog(t, "GetLogs", logs, canary, false)

	dir := os.Getenv("RESIDENT_K8S_DIR")
	if dir == "" {
		t.Log("RESIDENT_K8S_DIR unset: the node's pod log files not checked")
		return
	}
	pod, err := admin.CoreV1().Pods(testNamespace).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "pod-logs", testNamespace+"_"+id+"_"+string(pod.UID), "*", "*.log"))
	if len(files) == 0 {
		t.Fatalf("no pod log files for %s under %s/pod-logs", id, dir)
	}
	var sandboxLog []byte
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(canary)) {
			t.Fatalf("%s holds the canary", f)
		}
		if filepath.Base(filepath.Dir(f)) == containerSandbox {
			sandboxLog = append(sandboxLog, criLogStdout(t, raw)...)
		}
	}
	assertSealedLog(t, "the node's pod log", sandboxLog, canary, true)
}

// assertSealedLog checks a sandbox container's output as a log holds it:
// no canary, no frame but sealed ones (and Fenced, for a holder that was
// taken over), enough of them to be the channel's. The keeper writes the
// channel with its newlines escaped (keeperproto.LFEncoder), so the
// runtime keeps it as it came, cut into partial lines; GetLogs interleaves
// stderr lines (the keeper's own messages), so there frames that hold one
// do not read back (lossless: the node's file, read for stdout alone,
// where every byte must be in a frame).
func assertSealedLog(t *testing.T, what string, log []byte, canary string, lossless bool) {
	t.Helper()
	if bytes.Contains(log, []byte(canary)) {
		t.Fatalf("%s holds the canary in plaintext", what)
	}
	decoded, err := io.ReadAll(keeperproto.NewLFDecoder(bytes.NewReader(log)))
	if lossless && err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if bytes.Contains(decoded, []byte(canary)) {
		t.Fatalf("%s holds the canary in plaintext", what)
	}
	fr := keeperproto.NewFrameReader(bytes.NewReader(decoded))
	sealed := 0
	for {
		f, err := fr.Next()
		if err != nil {
			break
		}
		switch f.Type {
		case keeperproto.ChanSealed:
			sealed++
		case keeperproto.ChanFenced, keeperproto.ChanFailure:
			if f.Stream != 0 {
				t.Fatalf("%s: a plaintext frame %q on stream %d", what, f.Type, f.Stream)
			}
		default:
			t.Fatalf("%s: a plaintext frame %q on stream %d", what, f.Type, f.Stream)
		}
	}
	if lossless && fr.Skipped != 0 {
		t.Fatalf("%s: %d bytes outside frames in %d sealed frames", what, fr.Skipped, sealed)
	}
	if sealed < 10 {
		t.Fatalf("%s: %d sealed frames, %d bytes outside frames (%d bytes of log)", what, sealed, fr.Skipped, len(log))
	}
}

// criLogStdout is a container's stdout as the CRI log format holds it:
// lines "TIMESTAMP STREAM TAG CONTENT", TAG P for a part of a line (no
// newline of its own), F for the end of one.
func criLogStdout(t *testing.T, raw []byte) []byte {
	t.Helper()
	var out []byte
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		fields := bytes.SplitN(line, []byte(" "), 4)
		if len(fields) < 3 {
			t.Fatalf("a CRI log line %q", line)
		}
		if string(fields[1]) != "stdout" {
			continue
		}
		if len(fields) == 4 {
			out = append(out, fields[3]...)
		}
		if string(fields[2]) == "F" {
			// A full line: a newline on stdout, which an escaping keeper never writes.
			t.Errorf("a full line on the sandbox's stdout: %.80q", line)
			out = append(out, '\n')
		}
	}
	return out
}
