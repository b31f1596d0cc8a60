package local_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/local"
)

// TestMetaIsWholeOrAbsent: what a crash can leave (a staging directory, a
// sandbox directory without meta, a torn meta) is never listed, and a
// created sandbox's meta is complete, private and alone.
func TestMetaIsWholeOrAbsent(t *testing.T) {
	state := t.TempDir()
	p := open(t, state)
	c := context.Background()
	id, err := p.Create(c, protocol.Spec{Image: "img:1", Env: map[string]string{"A": "1"}}, owner, map[string]string{"job": "j"})
	must(t, err)
	t.Cleanup(func() { p.Terminate(context.Background(), id) })

	dir := filepath.Join(state, "local", "sandboxes", id)
	entries, err := os.ReadDir(dir)
	must(t, err)
	want := map[string]bool{"meta.json": true, "root": true}
	if bwrapInstalled() { // the init's files, beside root
		for _, name := range []string{"etc", "init.json", "init.log", "keeper.sock"} {
			want[name] = true
		}
	}
	for _, e := range entries {
		if !want[e.Name()] {
			t.Errorf("sandbox dir holds %s (of %v); want meta.json and root, and the init's files, only (no temp files)", e.Name(), entries)
		}
	}
	info, err := os.Stat(filepath.Join(dir, "meta.json"))
	must(t, err)
	if info.Mode().Perm() != 0o600 {
		t.Errorf("meta.json mode %v; want 0600 (it holds spec.env)", info.Mode().Perm())
	}
	var m struct {
		ID        string            `json:"id"`
		Tags      map[string]string `json:"tags"`
		CreatedAt time.Time         `json:"created_at"`
		Image     string            `json:"image"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	must(t, err)
	must(t, json.Unmarshal(data, &m))
	if m.ID != id || m.Tags[owner.Key] != owner.InstallID || m.Tags["job"] != "j" || m.Image != "img:1" || m.CreatedAt.IsZero() {
		t.Errorf("meta.json = %s", data)
	}

	sandboxes := filepath.Join(state, "local", "sandboxes")
	must(t, os.MkdirAll(filepath.Join(sandboxes, ".creating-lcl-00000000000000aa", "root"), 0o700))
	must(t, os.MkdirAll(filepath.Join(sandboxes, "lcl-00000000000000bb", "root"), 0o700)) // no meta
	must(t, os.MkdirAll(filepath.Join(sandboxes, "lcl-00000000000000cc"), 0o700))
	must(t, os.WriteFile(filepath.Join(sandboxes, "lcl-00000000000000cc", "meta.json"), []byte(`{"id":"lcl-00`), 0o600))
	list, err := p.ListOwned(c, owner)
	if err != nil || len(list) != 1 || list[0].SandboxID != id {
		t.Fatalf("ListOwned = %+v, %v; want only %s", list, err, id)
	}
	if _, err := p.ReadOwner(c, "lcl-00000000000000bb", owner.Key); protocol.KindOf(err) != protocol.KindNotFound {
		t.Errorf("ReadOwner(no meta) = %v; want not_found", err)
	}
}

// TestRecoverReapsLeftovers: a new instance removes stale staging
// directories (not fresh ones: another instance may be creating) and kills
// and deletes sandboxes a crash left half removed.
func TestRecoverReapsLeftovers(t *testing.T) {
	state := t.TempDir()
	sandboxes := filepath.Join(state, "local", "sandboxes")
	stale := filepath.Join(sandboxes, ".creating-lcl-00000000000000aa")
	fresh := filepath.Join(sandboxes, ".creating-lcl-00000000000000bb")
	halfGone := filepath.Join(state, "local", "trash", "lcl-00000000000000cc-1234", "root")
	for _, d := range []string{stale, fresh, halfGone} {
		must(t, os.MkdirAll(d, 0o700))
	}
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(stale, old, old))
	straggler := exec.Command("sleep", "300")
	straggler.Dir = halfGone
	must(t, straggler.Start())
	waited := make(chan error, 1)
	go func() { waited <- straggler.Wait() }()

	open(t, state)
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatal("a process left in a half-removed sandbox survived recovery")
	}
	for dir, want := range map[string]bool{stale: false, fresh: true, filepath.Dir(halfGone): false} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", dir, err == nil, want)
		}
	}
}

// TestLifetimeIsEnforcedLazily: with no timer firing (a resident that was
// down), an expired sandbox is ended by the next call that looks at it: its
// processes are killed, and it stays listed as expired until terminated.
func TestLifetimeIsEnforcedLazily(t *testing.T) {
	state := t.TempDir()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	pv, err := local.New(provider.Config{StateDir: state, Logger: zaptest.NewLogger(t), Now: clock})
	must(t, err)
	defer pv.Close()
	c := context.Background()
	id, err := pv.Create(c, protocol.Spec{LifetimeS: 3600}, owner, nil)
	must(t, err)
	r := start(t, pv, id, provider.ExecRequest{Argv: []string{"sleep", "300"}})

	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if list, err := pv.ListOwned(c, owner); err != nil || len(list) != 1 || list[0].State != protocol.StateExpired {
		t.Fatalf("ListOwned after the lifetime = %+v, %v; want it expired", list, err)
	}
	r.wait(t) // its exec was killed when the listing ended it
	if _, err := os.Stat(filepath.Join(state, "local", "sandboxes", id)); err != nil {
		t.Errorf("expired sandbox gone from disk before terminate: %v", err)
	}
	if _, err := pv.Exec(c, id, provider.ExecRequest{Argv: []string{"true"}}); protocol.KindOf(err) != protocol.KindConflict {
		t.Errorf("Exec in an expired sandbox = %v; want conflict", err)
	}
	if existed, err := pv.Terminate(c, id); err != nil || !existed {
		t.Errorf("Terminate of an expired sandbox = %v, %v; want true", existed, err)
	}
}

func TestCreateRefusals(t *testing.T) {
	state := t.TempDir()
	p := open(t, state)
	c := context.Background()
	refusals := map[string]protocol.Spec{
		"read-only volume":    {Volumes: []protocol.VolumeMount{{Name: "v", Path: "data", ReadOnly: true}}},
		"bad volume name":     {Volumes: []protocol.VolumeMount{{Name: "../v", Path: "data"}}},
		"dot volume name":     {Volumes: []protocol.VolumeMount{{Name: "..", Path: "data"}}},
		"volume at root":      {Volumes: []protocol.VolumeMount{{Name: "v", Path: "."}}},
		"volume at /":         {Volumes: []protocol.VolumeMount{{Name: "v", Path: "/"}}},
		"volume climbing out": {Volumes: []protocol.VolumeMount{{Name: "v", Path: "../data"}}},
		"nested volumes":      {Volumes: []protocol.VolumeMount{{Name: "v", Path: "data"}, {Name: "w", Path: "data/x"}}},
		"negative life":       {LifetimeS: -1},
	}
	if bwrapInstalled() {
		// Isolated, an absolute path is honoured, but not over what the
		// sandbox's view needs.
		refusals["volume over /usr"] = protocol.Spec{Volumes: []protocol.VolumeMount{{Name: "v", Path: "/usr/local"}}}
		refusals["volume at /proc"] = protocol.Spec{Volumes: []protocol.VolumeMount{{Name: "v", Path: "/proc"}}}
	} else {
		refusals["absolute volume path"] = protocol.Spec{Volumes: []protocol.VolumeMount{{Name: "v", Path: "/data"}}}
	}
	for name, spec := range refusals {
		_, err := p.Create(c, spec, owner, nil)
		if protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Errorf("%s: Create = %v; want invalid_request", name, err)
			continue
		}
		if name == "read-only volume" && !strings.Contains(err.Error(), "read_only") {
			t.Errorf("read-only refusal does not say why: %v", err)
		}
		// Unisolated, a command writing /data would write the host's /data,
		// never the volume: the refusal must say so, and what to give instead.
		if name == "absolute volume path" && !(strings.Contains(err.Error(), "host's") && strings.Contains(err.Error(), "relative")) {
			t.Errorf("absolute path refusal does not say why: %v", err)
		}
	}
	for _, tag := range []string{owner.Key, "Other-Install-ID", "dev.resident.managed"} {
		_, err := p.Create(c, protocol.Spec{Volumes: []protocol.VolumeMount{{Name: "v", Path: "/data"}}}, owner, map[string]string{tag: "x"})
		if protocol.KindOf(err) != protocol.KindInvalidRequest || !strings.Contains(err.Error(), tag) {
			t.Errorf("tag %q: Create = %v; want invalid_request naming it", tag, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(state, "local", "sandboxes"))
	vols, _ := os.ReadDir(filepath.Join(state, "local", "volumes"))
	if len(entries) != 0 || len(vols) != 0 {
		t.Errorf("refused creates left %v and volumes %v", entries, vols)
	}
}
