package providertest

import (
	"slices"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// testVolumeOwners: a volume of one install looks exactly missing to every
// other install, whatever its prefix, on every store call and in
// spec.volumes, and nothing is created for the refused mount.
func testVolumeOwners(t *testing.T, e *env, st provider.Store, vol string) {
	others := []provider.Owner{{Key: OwnerKey, InstallID: uniqueName("other")}}
	// A provider that writes one fixed owner key never meets a session of
	// another prefix: the resident owns by its key (provider.FixedOwnerKey).
	if fixed, ok := e.p.(provider.FixedOwnerKey); !ok || fixed.OwnerKey() == "" {
		others = append(others, provider.Owner{Key: "evil-install-id", InstallID: e.owner.InstallID})
	}
	for _, other := range others {
		seesMissing(t, e.p, e.h.Image, other, vol)
	}
	if vols, err := st.ListVolumes(ctx(t), e.owner); err != nil || !hasVolume(vols, vol) {
		t.Errorf("the owner's ListVolumes = %+v, %v; want %s", vols, err, vol)
	}
}

// testVolumeGrants: a volume the resident did not create is hidden until the
// operator grants it, read-only unless the grant says rw; a grant never
// opens a volume another install owns.
func testVolumeGrants(t *testing.T, h Harness) {
	if h.NewWith == nil || h.ForeignVolume == nil {
		t.Skip("Harness.NewWith or Harness.ForeignVolume is nil")
	}
	owner := provider.Owner{Key: OwnerKey, InstallID: uniqueName("install")}
	foreign, taken := uniqueName("foreign"), uniqueName("taken")
	h.ForeignVolume(t, foreign, map[string]string{"f.txt": "F"})
	h.Volume(t, provider.Owner{Key: OwnerKey, InstallID: uniqueName("holder")}, taken, map[string]string{"g.txt": "G"})

	seesMissing(t, h.New(t), h.Image, owner, foreign)

	readOnly := h.NewWith(t, func(c *provider.Config) {
		c.AllowVolumes = []provider.VolumeGrant{{Name: foreign}, {Name: taken, Writable: true}}
	})
	st := readOnly.(provider.Store)
	if vols, err := st.ListVolumes(ctx(t), owner); err != nil || !hasVolume(vols, foreign) || hasVolume(vols, taken) {
		t.Errorf("ListVolumes with grants = %+v, %v; want %s and not %s", vols, err, foreign, taken)
	}
	if got := readAll(t, st, owner, foreign, "f.txt"); got != "F" {
		t.Errorf("a granted volume reads %q", got)
	}
	seesMissing(t, readOnly, h.Image, owner, taken)
	_, err := readOnly.Create(ctx(t), protocol.Spec{Image: h.Image, Volumes: []protocol.VolumeMount{{Name: foreign, Path: "data"}}}, owner, nil)
	wantKind(t, "a read-write mount of a read-only grant", err, protocol.KindInvalidRequest)
	if list, err := readOnly.ListOwned(ctx(t), owner); err != nil || len(list) != 0 {
		t.Fatalf("the refused mount created %+v, %v", list, err)
	}
	if readOnly.Info().Capabilities.ReadOnlyVolumes {
		id := createAs(t, readOnly, h, owner, protocol.Spec{Volumes: []protocol.VolumeMount{{Name: foreign, Path: "data", ReadOnly: true}}}, nil)
		if out, _, st := runIn(t, readOnly, id, provider.ExecRequest{Argv: []string{"sh", "-c", "cat f.txt; echo x > x.txt"}, Cwd: "/data"}); out != "F" || st.Code == 0 {
			t.Errorf("read-only mount of a grant: read %q, write exit %d; want F and a failed write", out, st.Code)
		}
	}

	writable := h.NewWith(t, func(c *provider.Config) {
		c.AllowVolumes = []provider.VolumeGrant{{Name: foreign, Writable: true}}
	})
	id := createAs(t, writable, h, owner, protocol.Spec{Volumes: []protocol.VolumeMount{{Name: foreign, Path: "data"}}}, nil)
	if _, errOut, st := runIn(t, writable, id, provider.ExecRequest{Argv: []string{"sh", "-c", "echo w > w.txt"}, Cwd: "/data"}); st.Code != 0 {
		t.Fatalf("writing into an rw grant: exit %d: %s", st.Code, errOut)
	}
	if got := readAll(t, writable.(provider.Store), owner, foreign, "w.txt"); got != "w\n" {
		t.Errorf("the store reads %q for a file the sandbox wrote into an rw grant", got)
	}
}

// seesMissing checks that owner finds vol exactly as missing as a volume
// that does not exist: same kind, same words, on every store call and in
// spec.volumes, and that the refused create made nothing.
func seesMissing(t *testing.T, p provider.Provider, image string, owner provider.Owner, vol string) {
	t.Helper()
	st := p.(provider.Store)
	missing := uniqueName("no-such-volume")
	same := func(what string, err, missingErr error) {
		t.Helper()
		wantKind(t, what, err, protocol.KindNotFound)
		if want := strings.ReplaceAll(missingErr.Error(), missing, vol); err.Error() != want {
			t.Errorf("%s: %q; a missing volume answers %q", what, err, want)
		}
	}
	if vols, err := st.ListVolumes(ctx(t), owner); err != nil || hasVolume(vols, vol) {
		t.Errorf("ListVolumes(%s=%s) = %+v, %v; must not show %s", owner.Key, owner.InstallID, vols, err, vol)
	}
	_, _, errMissing := st.ListDir(ctx(t), owner, missing, "", 10)
	_, _, err := st.ListDir(ctx(t), owner, vol, "", 10)
	same("ListDir of another's volume", err, errMissing)
	_, errMissing = st.ReadFile(ctx(t), owner, missing, "a.txt")
	_, err = st.ReadFile(ctx(t), owner, vol, "a.txt")
	same("ReadFile of another's volume", err, errMissing)
	mounts := [][]protocol.VolumeMount{{{Name: vol, Path: "data"}}}
	if p.Info().Capabilities.ReadOnlyVolumes {
		mounts = append(mounts, []protocol.VolumeMount{{Name: vol, Path: "data", ReadOnly: true}})
	}
	for _, m := range mounts {
		_, err = p.Create(ctx(t), protocol.Spec{Image: image, Volumes: m}, owner, nil)
		same("mounting another's volume", err, errMissing)
	}
	if list, err := p.ListOwned(ctx(t), owner); err != nil || len(list) != 0 {
		t.Errorf("refused mounts created %+v, %v", list, err)
	}
}

func hasVolume(vols []protocol.Volume, name string) bool {
	return slices.ContainsFunc(vols, func(v protocol.Volume) bool { return v.Name == name })
}
