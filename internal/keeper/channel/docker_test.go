package channel

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/provider/docker/dockertest"
)

// sandbox is a Docker container whose init is "keeper serve -stdio", made
// as the Docker provider makes sandboxes (every capability dropped but the
// keeper's four, no-new-privileges, a pids limit), with the channel
// carried by the container's attach stream.
type sandbox struct {
	cli *client.Client
	id  string
	att client.HijackedResponse
	out *io.PipeReader
}

var (
	hostileOnce sync.Once
	hostileBin  string
	hostileErr  error
)

// buildHostile builds testdata/hostile once.
func buildHostile(t testing.TB) string {
	hostileOnce.Do(func() {
		hostileBin = filepath.Join(filepath.Dir(keeperBin), "hostile")
		cmd := exec.Command("go", "build", "-o", hostileBin, "./testdata/hostile")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			hostileErr = err
			t.Logf("%s", out)
		}
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return hostileBin
}

func startSandbox(t testing.TB, memoryMB int64) *sandbox {
	return startSandboxPids(t, memoryMB, 256)
}

func startSandboxPids(t testing.TB, memoryMB, pids int64) *sandbox {
	t.Helper()
	return startContainer(t, []string{keeperproto.Path, keeperproto.CmdServe, "-stdio"}, memoryMB, pids)
}

// startContainer makes (and does not start) a sandbox's container with
// cmd as its PID 1.
func startContainer(t testing.TB, cmd []string, memoryMB, pids int64) *sandbox {
	t.Helper()
	cli := dockertest.Need(t)
	image, _, err := dockertest.Images(cli)
	if err != nil {
		t.Fatal(err)
	}
	c := context.Background()
	noInit := false
	hc := &container.HostConfig{
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"CAP_KILL", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"},
		SecurityOpt: []string{"no-new-privileges"},
		Init:        &noInit, // the keeper is PID 1
		NetworkMode: "none",
		Resources:   container.Resources{PidsLimit: &pids},
	}
	if memoryMB > 0 {
		hc.Memory = memoryMB << 20
		hc.MemorySwap = hc.Memory
	}
	created, err := cli.ContainerCreate(c, client.ContainerCreateOptions{
		Config: &container.Config{
			Image: image, User: "0:0", Cmd: cmd,
			OpenStdin: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		},
		HostConfig: hc,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cli.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true})
	})
	keeper, err := os.ReadFile(keeperBin)
	if err != nil {
		t.Fatal(err)
	}
	hostile, err := os.ReadFile(buildHostile(t))
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	_ = tw.WriteHeader(&tar.Header{Name: ".resident/", Typeflag: tar.TypeDir, Mode: 0o755})
	for name, data := range map[string][]byte{".resident/keeper": keeper, "hostile": hostile} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data))})
		_, _ = tw.Write(data)
	}
	_ = tw.Close()
	if _, err := cli.CopyToContainer(c, created.ID, client.CopyToContainerOptions{DestinationPath: "/", Content: &layer}); err != nil {
		t.Fatal(err)
	}
	return &sandbox{cli: cli, id: created.ID}
}

// attach is one attacher of the container's stdio, as a channel transport:
// its stdout, demultiplexed (stderr goes to the test log), and its stdin.
func (s *sandbox) attach(t testing.TB) io.ReadWriteCloser {
	t.Helper()
	att, err := s.cli.ContainerAttach(context.Background(), s.id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, testWriter{t}, att.Reader)
		pw.CloseWithError(err)
	}()
	return &attachRW{att: att.HijackedResponse, out: pr}
}

func (s *sandbox) start(t testing.TB) {
	t.Helper()
	if _, err := s.cli.ContainerStart(context.Background(), s.id, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
}

type attachRW struct {
	att client.HijackedResponse
	out *io.PipeReader
}

func (a *attachRW) Read(p []byte) (int, error)  { return a.out.Read(p) }
func (a *attachRW) Write(p []byte) (int, error) { return a.att.Conn.Write(p) }
func (a *attachRW) Close() error {
	a.att.Close()
	return a.out.Close()
}

// openSandbox starts a sandbox and opens its channel.
func openSandbox(t testing.TB, memoryMB int64) (*sandbox, *Conn) {
	t.Helper()
	return openSandboxPids(t, memoryMB, 256)
}

func openSandboxPids(t testing.TB, memoryMB, pids int64) (*sandbox, *Conn) {
	t.Helper()
	s := startSandboxPids(t, memoryMB, pids)
	rw := s.attach(t) // before start: not a byte missed
	s.start(t)
	c, err := Open(ctx(t), rw, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.Protected() {
		t.Fatal("the keeper in a sandbox runs unprotected")
	}
	return s, c
}
