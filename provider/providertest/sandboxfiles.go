package providertest

import (
	"bytes"
	"crypto/sha256"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// wantReason checks an error's kind (the reason's own) and reason.
func wantReason(t *testing.T, what string, err error, reason protocol.Reason) {
	t.Helper()
	wantKind(t, what, err, reason.Kind())
	if got, _ := protocol.ReasonOf(err); got != reason {
		t.Fatalf("%s: error %q has reason %q, want %q", what, err, got, reason)
	}
}

func readSandboxFile(t *testing.T, f provider.SandboxFiles, id, path string) ([]byte, error) {
	t.Helper()
	r, err := f.ReadSandboxFile(ctx(t), id, path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// canDo runs a probe script as the sandbox's user: whether that user may
// do what the probe does decides what a file operation must answer.
func (e *env) canDo(id, script string) bool {
	_, _, st := e.run(id, provider.ExecRequest{Argv: []string{"sh", "-c", script}, Cwd: "/"})
	return st.Code == 0
}

func runSandboxFiles(t *testing.T, h Harness) {
	e := newEnv(t, h)
	f, ok := e.p.(provider.SandboxFiles)
	if !ok || !e.p.Info().Capabilities.SandboxFiles {
		t.Skip("provider cannot read a running sandbox's files")
	}
	id := e.create(protocol.Spec{Workdir: "/wd"}, nil)
	e.sh(id, "/", "mkdir -p wd/sub && printf 'hello\\n' > wd/hello.txt && printf 'abc' > wd/sub/x && ln -s hello.txt wd/link")

	t.Run("read_relative_and_absolute", func(t *testing.T) {
		for _, p := range []string{"hello.txt", "/wd/hello.txt", "sub/../hello.txt"} {
			got, err := readSandboxFile(t, f, id, p)
			if err != nil || string(got) != "hello\n" {
				t.Errorf("read %q: %q, %v", p, got, err)
			}
		}
	})

	t.Run("read_binary_exactly", func(t *testing.T) {
		e.sh(id, "/", `i=0; while [ $i -lt 256 ]; do printf "\\$(printf %o $i)"; i=$((i+1)); done > wd/all.bin`)
		got, err := readSandboxFile(t, f, id, "all.bin")
		if err != nil || len(got) != 256 {
			t.Fatalf("all.bin: %d bytes, %v", len(got), err)
		}
		for i, b := range got {
			if int(b) != i {
				t.Fatalf("all.bin byte %d is %d", i, b)
			}
		}
	})

	t.Run("reasons", func(t *testing.T) {
		_, err := readSandboxFile(t, f, id, "missing.txt")
		wantReason(t, "read of a missing file", err, protocol.ReasonNoSuchFile)
		_, err = readSandboxFile(t, f, id, "sub")
		wantReason(t, "read of a directory", err, protocol.ReasonIsDirectory)
		_, err = readSandboxFile(t, f, id, "hello.txt/under")
		wantReason(t, "read through a file", err, protocol.ReasonNotDirectory)
		_, _, err = f.ListSandboxDir(ctx(t), id, "hello.txt", 10)
		wantReason(t, "list of a file", err, protocol.ReasonNotDirectory)
		_, _, err = f.ListSandboxDir(ctx(t), id, "nope", 10)
		wantReason(t, "list of a missing directory", err, protocol.ReasonNoSuchFile)
		e.sh(id, "/", "printf secret > wd/closed && chmod 000 wd/closed")
		_, err = readSandboxFile(t, f, id, "closed")
		if e.canDo(id, "cat wd/closed") {
			if err != nil {
				t.Errorf("read of a file the sandbox's user may read: %v", err)
			}
		} else {
			wantReason(t, "read of a file the sandbox's user may not read", err, protocol.ReasonPermissionDenied)
		}
	})

	t.Run("missing_sandbox_has_no_reason", func(t *testing.T) {
		_, err := readSandboxFile(t, f, missingSandboxID(e, id), "hello.txt")
		wantKind(t, "read in a missing sandbox", err, protocol.KindNotFound)
		if r, _ := protocol.ReasonOf(err); r != "" {
			t.Fatalf("a missing sandbox has reason %q: it must not look like a missing file", r)
		}
	})

	t.Run("list_dir", func(t *testing.T) {
		entries, truncated, err := f.ListSandboxDir(ctx(t), id, ".", 100)
		if err != nil || truncated {
			t.Fatalf("list: %v truncated=%v", err, truncated)
		}
		types := map[string]string{}
		for _, en := range entries {
			types[en.Name] = en.Type
			if en.Name == "hello.txt" && en.Size != 6 {
				t.Errorf("hello.txt size %d", en.Size)
			}
			if en.Mtime.IsZero() {
				t.Errorf("%s has no mtime", en.Name)
			}
		}
		want := map[string]string{"hello.txt": protocol.EntryFile, "sub": protocol.EntryDir, "link": protocol.EntrySymlink}
		for name, typ := range want {
			if types[name] != typ {
				t.Errorf("%s: type %q, want %q (all: %v)", name, types[name], typ, types)
			}
		}
		few, truncated, err := f.ListSandboxDir(ctx(t), id, "/wd", 1)
		if err != nil || len(few) != 1 || !truncated {
			t.Fatalf("limit 1: %d entries, truncated=%v, %v", len(few), truncated, err)
		}
	})
}

// missingSandboxID is an id shaped like the provider's own that names no
// sandbox: the live one with its last character changed.
func missingSandboxID(e *env, id string) string {
	last := id[len(id)-1]
	swap := byte('0')
	if last == '0' {
		swap = '1'
	}
	gone := id[:len(id)-1] + string(swap)
	if slices.ContainsFunc(e.listOwned(), func(b protocol.Sandbox) bool { return b.SandboxID == gone }) {
		e.t.Fatalf("made-up id %s exists", gone)
	}
	return gone
}

// pattern is n bytes that no short period repeats, so a misplaced chunk
// changes the hash.
func pattern(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes (sha256 %x), want %d (sha256 %x)", what, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want))
	}
}

func noTemporaryFiles(t *testing.T, e *env, id, dir string) {
	t.Helper()
	if out := e.sh(id, "/", "ls -a "+dir); strings.Contains(out, ".resident-upload") {
		t.Fatalf("a temporary upload file was left in %s: %q", dir, out)
	}
}
