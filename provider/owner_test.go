package provider

import (
	"testing"

	"github.com/resident-dev/resident/protocol"
)

func TestOwnerOf(t *testing.T) {
	const key = "resident-install-id"
	for _, c := range []struct {
		name string
		tags map[string]string
		want string
	}{
		{"owned", map[string]string{key: "a", "job": "j"}, "a"},
		{"no tags", nil, ""},
		{"no owner tag", map[string]string{"job": "j"}, ""},
		{"another prefix's owner", map[string]string{"evil-install-id": "a"}, ""},
		{"two prefixes: ambiguous", map[string]string{key: "a", "evil-install-id": "a"}, ""},
		{"a case variant: ambiguous", map[string]string{key: "a", "RESIDENT-INSTALL-ID": "a"}, ""},
		{"only a case variant", map[string]string{"Resident-Install-Id": "a"}, ""},
		{"not owner-shaped lookalikes", map[string]string{key: "a", "install-id": "b", "x-install-id-2": "c", "x_install_id": "d"}, "a"},
	} {
		if got := OwnerOf(c.tags, key); got != c.want {
			t.Errorf("%s: OwnerOf(%v) = %q, want %q", c.name, c.tags, got, c.want)
		}
	}
	o := Owner{Key: key, InstallID: "a"}
	if !o.Owns(map[string]string{key: "a"}) || o.Owns(map[string]string{key: "a", "b-install-id": "a"}) || (Owner{Key: key}).Owns(map[string]string{key: ""}) {
		t.Error("Owns disagrees with OwnerOf")
	}
}

func TestCheckHostTags(t *testing.T) {
	for _, bad := range []string{"resident-install-id", "EVIL-Install-ID", "team/a-install-id", "dev.resident.managed", "Dev.Resident.Role"} {
		err := CheckHostTags(map[string]string{"job": "j", bad: "x"})
		if protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Errorf("tag %q: %v, want invalid_request", bad, err)
		}
	}
	if err := CheckHostTags(map[string]string{"install-id": "x", "dev.residents": "x", "a-install-id-b": "x", "dev.resident": "x"}); err != nil {
		t.Errorf("harmless tags refused: %v", err)
	}
}

func TestOwnerValidate(t *testing.T) {
	for _, bad := range []Owner{{}, {Key: "resident-install-id"}, {Key: "owner", InstallID: "a"}, {Key: "dev.resident.x-install-id", InstallID: "a"}} {
		if err := bad.Validate(); protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if err := (Owner{Key: "acme-install-id", InstallID: "a"}).Validate(); err != nil {
		t.Error(err)
	}
}
