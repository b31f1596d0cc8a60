package providertest

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

var seedFiles = map[string]string{
	"a.txt":     "A",
	"b.txt":     "BB",
	"c.bin":     "\x00\xff\xfe",
	"d.txt":     "DDDD",
	"sub/e.txt": "EEEEE",
}

func runStore(t *testing.T, h Harness) {
	e := newEnv(t, h)
	st, ok := e.p.(provider.Store)
	if !ok || !e.p.Info().Capabilities.Store {
		t.Skip("provider has no store")
	}
	if h.Volume == nil {
		t.Fatal("provider implements provider.Store but Harness.Volume is nil")
	}
	vol := uniqueName("vol")
	h.Volume(t, e.owner, vol, seedFiles)

	t.Run("list_volumes", func(t *testing.T) {
		vols, err := st.ListVolumes(ctx(t), e.owner)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(vols, func(v protocol.Volume) bool { return v.Name == vol })
		if i < 0 || vols[i].CreatedAt.IsZero() {
			t.Fatalf("ListVolumes = %+v, want %s with created_at", vols, vol)
		}
		if at := vols[i].CreatedAt.Format(time.RFC3339Nano); strings.Contains(at, ".") || !strings.HasSuffix(at, "Z") {
			t.Errorf("volume created_at %s: want a UTC time in whole seconds, as for sandboxes", at)
		}
	})

	t.Run("list_dir", func(t *testing.T) {
		entries, truncated, err := st.ListDir(ctx(t), e.owner, vol, "", 100)
		if err != nil || truncated {
			t.Fatalf("ListDir = %v, truncated=%v", err, truncated)
		}
		slices.SortFunc(entries, func(a, b protocol.DirEntry) int { return strings.Compare(a.Name, b.Name) })
		want := []struct {
			name, typ string
			size      int64
		}{{"a.txt", protocol.EntryFile, 1}, {"b.txt", protocol.EntryFile, 2}, {"c.bin", protocol.EntryFile, 3}, {"d.txt", protocol.EntryFile, 4}, {"sub", protocol.EntryDir, -1}}
		if len(entries) != len(want) {
			t.Fatalf("ListDir = %+v, want %d entries", entries, len(want))
		}
		for i, w := range want {
			got := entries[i]
			if got.Name != w.name || got.Type != w.typ || (w.size >= 0 && got.Size != w.size) || got.Mtime.IsZero() {
				t.Errorf("entry %d = %+v, want %s %s size %d with mtime", i, got, w.name, w.typ, w.size)
			}
		}
		sub, _, err := st.ListDir(ctx(t), e.owner, vol, "sub", 100)
		if err != nil || len(sub) != 1 || sub[0].Name != "e.txt" || sub[0].Size != 5 {
			t.Errorf("ListDir(sub) = %+v, %v", sub, err)
		}
	})

	t.Run("list_dir_limit_and_truncated", func(t *testing.T) {
		for _, c := range []struct {
			limit     int
			n         int
			truncated bool
		}{{1, 1, true}, {2, 2, true}, {4, 4, true}, {5, 5, false}, {6, 5, false}} {
			entries, truncated, err := st.ListDir(ctx(t), e.owner, vol, "", c.limit)
			if err != nil || len(entries) != c.n || truncated != c.truncated {
				t.Errorf("limit %d: %d entries, truncated=%v, err %v; want %d, %v", c.limit, len(entries), truncated, err, c.n, c.truncated)
			}
		}
	})

	t.Run("list_dir_errors", func(t *testing.T) {
		_, _, err := st.ListDir(ctx(t), e.owner, vol, "missing", 10)
		wantKind(t, "ListDir(missing)", err, protocol.KindNotFound)
		_, _, err = st.ListDir(ctx(t), e.owner, vol, "a.txt", 10)
		wantKind(t, "ListDir(a file)", err, protocol.KindInvalidRequest)
		_, _, err = st.ListDir(ctx(t), e.owner, uniqueName("no-such-volume"), "", 10)
		wantKind(t, "ListDir(missing volume)", err, protocol.KindNotFound)
	})

	t.Run("read_file", func(t *testing.T) {
		for name, want := range seedFiles {
			if got := readAll(t, st, e.owner, vol, name); got != want {
				t.Errorf("ReadFile(%s) = %q, want %q", name, got, want)
			}
		}
		_, err := st.ReadFile(ctx(t), e.owner, vol, "sub")
		wantKind(t, "ReadFile(a directory)", err, protocol.KindInvalidRequest)
		_, err = st.ReadFile(ctx(t), e.owner, vol, "nope.txt")
		wantKind(t, "ReadFile(missing)", err, protocol.KindNotFound)
		_, err = st.ReadFile(ctx(t), e.owner, uniqueName("no-such-volume"), "a.txt")
		wantKind(t, "ReadFile(missing volume)", err, protocol.KindNotFound)
	})

	t.Run("volume_mounted_in_a_sandbox", func(t *testing.T) {
		// A relative mount path is taken in the work directory, where
		// commands run by default; every provider honours it (local refuses
		// an absolute one, which its commands would not see).
		id := e.create(protocol.Spec{Workdir: "/wd", Volumes: []protocol.VolumeMount{{Name: vol, Path: "data"}}}, nil)
		if got := e.sh(id, "", "cat data/sub/e.txt; echo from-sandbox > data/made.txt"); got != "EEEEE" {
			t.Errorf("the sandbox sees %q in the volume", got)
		}
		if got := readAll(t, st, e.owner, vol, "made.txt"); got != "from-sandbox\n" {
			t.Errorf("the store sees %q for a file the sandbox wrote", got)
		}
		if fw, ok := e.p.(provider.FileWriter); ok && e.p.Info().Capabilities.WriteFile {
			if err := fw.WriteFile(ctx(t), id, "data/written/w.txt", []byte("via write_file"), nil); err != nil {
				t.Fatalf("WriteFile into the volume: %v", err)
			}
			if got := readAll(t, st, e.owner, vol, "written/w.txt"); got != "via write_file" {
				t.Errorf("the store sees %q for a file write_file put in the volume", got)
			}
		}
	})

	t.Run("no_path_leaves_the_volume", func(t *testing.T) { testStoreEscapes(t, e, st, vol) })
	t.Run("volumes_are_owner_scoped", func(t *testing.T) { testVolumeOwners(t, e, st, vol) })
	t.Run("unowned_volumes_need_a_grant", func(t *testing.T) { testVolumeGrants(t, h) })
}

// testStoreEscapes plants a secret outside the volume and tries every way
// out: "..", absolute paths, and symlinks (absolute, relative, to "/") made
// from inside a sandbox, as a hostile workload would.
func testStoreEscapes(t *testing.T, e *env, st provider.Store, vol string) {
	const secret = "TOP-SECRET-OUTSIDE-THE-VOLUME"
	secretPath := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secretPath, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	id := e.create(protocol.Spec{Volumes: []protocol.VolumeMount{{Name: vol, Path: "data"}}}, nil)
	script := `ln -s "$SECRET_PATH" abs-leak &&
ln -s "../../../../../../../../../../../..$SECRET_PATH" rel-leak &&
ln -s / root-link &&
ln -s "$(dirname "$SECRET_PATH")" dir-link &&
mkdir -p deep && ln -s ../../../../../../../../../../../../etc deep/etc-link`
	if _, errOut, st := e.run(id, provider.ExecRequest{Argv: []string{"sh", "-c", script}, Cwd: "data", Env: map[string]string{"SECRET_PATH": secretPath}}); st.Code != 0 {
		t.Fatalf("planting symlinks: exit %d: %s", st.Code, errOut)
	}

	reads := []string{"abs-leak", "rel-leak", "root-link/etc/passwd", "dir-link/secret.txt", "deep/etc-link/passwd",
		"../secret.txt", "sub/../../secret.txt", "../../../../../../../../../.." + secretPath, secretPath, "/etc/passwd"}
	for _, p := range reads {
		rc, err := st.ReadFile(ctx(t), e.owner, vol, p)
		if err == nil {
			data, _ := io.ReadAll(rc)
			_ = rc.Close()
			t.Errorf("ReadFile(%q) succeeded (%d bytes, secret=%v); want not_found or invalid_request", p, len(data), strings.Contains(string(data), secret))
			continue
		}
		wantKind(t, "ReadFile("+p+")", err, protocol.KindNotFound, protocol.KindInvalidRequest)
	}
	for _, p := range []string{"root-link", "dir-link", "deep/etc-link", "..", "sub/../..", "/etc"} {
		entries, _, err := st.ListDir(ctx(t), e.owner, vol, p, 100)
		if err == nil {
			t.Errorf("ListDir(%q) succeeded with %d entries; want not_found or invalid_request", p, len(entries))
			continue
		}
		wantKind(t, "ListDir("+p+")", err, protocol.KindNotFound, protocol.KindInvalidRequest)
	}
	for _, name := range []string{"..", ".", "../" + vol, vol + "/..", "/"} {
		_, _, err := st.ListDir(ctx(t), e.owner, name, "", 10)
		wantKind(t, "ListDir(volume "+name+")", err, protocol.KindNotFound, protocol.KindInvalidRequest)
	}
	entries, _, err := st.ListDir(ctx(t), e.owner, vol, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if strings.HasSuffix(en.Name, "-leak") || strings.HasSuffix(en.Name, "-link") {
			if en.Type != protocol.EntrySymlink {
				t.Errorf("ListDir shows %s as %s; a symlink must be listed as one, not followed", en.Name, en.Type)
			}
		}
	}
}

func readAll(t *testing.T, st provider.Store, owner provider.Owner, vol, path string) string {
	t.Helper()
	rc, err := st.ReadFile(ctx(t), owner, vol, path)
	if err != nil {
		t.Fatalf("ReadFile(%s, %s): %v", vol, path, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("ReadFile(%s, %s): read: %v", vol, path, err)
	}
	return string(data)
}
