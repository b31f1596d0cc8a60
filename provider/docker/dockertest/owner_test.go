package dockertest

import "testing"

// OwnerIn takes an owner tag under any prefix and case, and nothing else.
func TestOwnerInMatchesOwnerTagsOnly(t *testing.T) {
	owned := OwnerIn(func(id string) bool { return id == "install-a" })
	for _, c := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"resident-install-id": "install-a"}, true},
		{map[string]string{"evil-install-id": "install-a", "dev.resident.managed": "x"}, true},
		{map[string]string{"Resident-Install-Id": "install-a"}, true},
		{map[string]string{"resident-install-id": "install-b"}, false},
		{map[string]string{"task": "install-a"}, false},
		{map[string]string{}, false},
	} {
		if got := owned(c.labels); got != c.want {
			t.Errorf("%v: %v, want %v", c.labels, got, c.want)
		}
	}
}
