package provider

import "testing"

func TestParseVolumeGrant(t *testing.T) {
	for in, want := range map[string]VolumeGrant{"data": {Name: "data"}, "data:ro": {Name: "data"}, "data:rw": {Name: "data", Writable: true}, "a.b_c-1": {Name: "a.b_c-1"}} {
		if got, err := ParseVolumeGrant(in); err != nil || got != want {
			t.Errorf("ParseVolumeGrant(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", ":rw", "..", ".", "../x", "a/b", "data:RW", "data:", "data:rw:x"} {
		if _, err := ParseVolumeGrant(bad); err == nil {
			t.Errorf("ParseVolumeGrant(%q) accepted", bad)
		}
	}
}

func TestAccessTo(t *testing.T) {
	me := Owner{Key: "resident-install-id", InstallID: "me"}
	grants := []VolumeGrant{{Name: "ro"}, {Name: "rw", Writable: true}}
	for _, c := range []struct {
		name, vol string
		tags      map[string]string
		want      VolumeAccess
	}{
		{"mine", "x", map[string]string{me.Key: "me"}, VolumeReadWrite},
		{"mine, even if granted read-only", "ro", map[string]string{me.Key: "me"}, VolumeReadWrite},
		{"another install's", "x", map[string]string{me.Key: "you"}, VolumeHidden},
		{"another prefix's", "x", map[string]string{"evil-install-id": "me"}, VolumeHidden},
		{"another's, granted", "rw", map[string]string{"evil-install-id": "me"}, VolumeHidden},
		{"ambiguous", "x", map[string]string{me.Key: "me", "evil-install-id": "me"}, VolumeHidden},
		{"nobody's", "x", map[string]string{"other": "label"}, VolumeHidden},
		{"nobody's, granted", "ro", nil, VolumeReadOnly},
		{"nobody's, granted rw", "rw", map[string]string{"other": "label"}, VolumeReadWrite},
	} {
		if got := AccessTo(me, c.vol, c.tags, grants); got != c.want {
			t.Errorf("%s: AccessTo = %v, want %v", c.name, got, c.want)
		}
	}
}
