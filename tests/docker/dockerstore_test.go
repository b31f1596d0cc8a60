package docker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider/docker"
	"github.com/resident-dev/resident/tests"
)

// A resident is SIGKILLed in the middle of a store/read_file (its host
// stopped reading, so the read is held mid-file). The store helper must
// not outlive it: once a new resident has started, no container mounts
// the volume any more and the volume can be removed.
func TestDockerResidentKilledMidReadLeavesNoHelper(t *testing.T) {
	image := NeedDocker(t)
	install, vol := tests.UniqueInstall("orphan"), tests.UniqueInstall("po")
	tests.RemoveVolumesLater(t, vol)
	dockerHost := "DOCKER_HOST=" + os.Getenv("DOCKER_HOST")
	h := tests.SpawnRaw(t, []string{"--provider", "docker"}, dockerHost)
	h.Send(1, "initialize", fmt.Sprintf(`{"protocol_version":1,"install_id":%q}`, install))
	mustResult(t, h.Await(1))
	h.Send(2, "sandbox/create", fmt.Sprintf(`{"spec":{"image":%q,"volumes":[{"name":%q,"path":"/data"}]}}`, image, vol))
	var box protocol.CreateResult
	_ = json.Unmarshal(mustResult(t, h.Await(2)), &box)
	h.Send(3, "sandbox/exec", fmt.Sprintf(`{"sandbox_id":%q,"exec_id":"fill","argv":["sh","-c","head -c 67108864 /dev/zero > /data/big"]}`, box.SandboxID))
	mustResult(t, h.Await(3))
	h.Send(4, "sandbox/terminate", fmt.Sprintf(`{"sandbox_id":%q}`, box.SandboxID))
	mustResult(t, h.Await(4))

	h.Send(5, "store/read_file", fmt.Sprintf(`{"root":%q,"path":"big","stream_id":"slow"}`, vol))
	if body, err := h.ReadFrame(); err != nil {
		t.Fatalf("no store/data before the kill: %v", err)
	} else if !json.Valid(body) {
		t.Fatalf("frame: %.200s", body)
	}
	// The host reads no more: the resident blocks on its stdout, the read
	// stays in the middle of the file.
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	onVolume := client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("volume", vol).Add("label", docker.LabelManaged+"=true")}
	if n := countContainers(t, cli, onVolume); n != 1 {
		t.Fatalf("%d containers mount the volume mid-read, want the one helper", n)
	}
	h.Kill()

	next := tests.SpawnRaw(t, []string{"--provider", "docker"}, dockerHost)
	next.Send(1, "initialize", fmt.Sprintf(`{"protocol_version":1,"install_id":%q}`, install))
	mustResult(t, next.Await(1))
	deadline := time.Now().Add(60 * time.Second)
	for countContainers(t, cli, onVolume) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the store helper of the killed resident still mounts the volume 60s after a new resident started")
		}
		time.Sleep(100 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.VolumeRemove(ctx, vol, client.VolumeRemoveOptions{}); err != nil {
		t.Fatalf("the volume cannot be removed after the helper went: %v", err)
	}
}

func countContainers(t *testing.T, cli *client.Client, opts client.ContainerListOptions) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

func mustResult(t *testing.T, m map[string]json.RawMessage) json.RawMessage {
	t.Helper()
	if m["error"] != nil {
		t.Fatalf("error: %s", m["error"])
	}
	return m["result"]
}

// A 200 KB store path is the host's mistake, answered invalid_request
// naming the bound, never internal ("argument list too long" from the
// helper's argv); a path at the bound reaches the provider.
func TestDockerLongStorePathIsInvalidRequest(t *testing.T) {
	image := NeedDocker(t)
	h := SpawnDocker(t, tests.LiveOpts{}, "")
	if got := h.Init(tests.UniqueInstall("longpath"), nil).Limits.MaxPathBytes; got != 4096 {
		t.Fatalf("limits.max_path_bytes = %d", got)
	}
	vol := tests.UniqueInstall("pl")
	tests.RemoveVolumesLater(t, vol)
	box := h.Create(map[string]any{"image": image, "volumes": []map[string]any{{"name": vol, "path": "/data"}}})
	long := strings.Repeat("d/", 100<<10)
	for _, method := range []string{protocol.MethodStoreReadFile, protocol.MethodStoreListDir} {
		msg := h.CallErr(method, map[string]any{"root": vol, "path": long, "stream_id": "l"}, protocol.KindInvalidRequest)
		if !strings.Contains(msg, "at most 4096 bytes") {
			t.Errorf("%s: %q", method, msg)
		}
	}
	// At the bound the provider answers: not found, or the kernel's "file
	// name too long" (PATH_MAX counts the NUL), but never internal.
	m := h.Await(h.Send(protocol.MethodStoreReadFile, map[string]any{"root": vol, "path": strings.Repeat("abcdefg/", 512), "stream_id": "l"}))
	if k := m.Kind(); (k != protocol.KindNotFound && k != protocol.KindInvalidRequest) || strings.Contains(m.Error.Message, "at most 4096 bytes") {
		t.Errorf("read_file at the bound: %s %.200s", k, m.Error.Message)
	}
	h.Call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": box}, nil)
}
