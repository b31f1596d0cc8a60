package resident

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// The owner tag cannot be smuggled into sandbox/create by any spelling a
// JSON parser might resolve differently from the resident's checks:
// duplicate keys (first-wins vs last-wins parsers), case variants (Go's
// encoding/json matches struct fields case-insensitively, with Unicode
// folding: the Kelvin sign K and the long s ſ fold to k and s), variants
// of the envelope's own members, and owner keys in other cases or with
// look-alike characters. Each is refused or harmless; the provider never
// receives a tag map holding the owner key, and every sandbox it created
// carries exactly this install's owner tag.
func TestOwnerTagCannotBeSmuggled(t *testing.T) {
	fake := newFake()
	h := startHost(t, fake)
	h.initialize(nil) // owner key resident-install-id, value test-install
	const key = "resident-install-id"
	cases := []struct {
		name, params string
		top          string // extra top-level members
	}{
		{"plain", `{"tags":{"` + key + `":"evil"}}`, ""},
		{"upper case", `{"tags":{"RESIDENT-INSTALL-ID":"evil"}}`, ""},
		{"mixed case", `{"tags":{"Resident-Install-Id":"evil"}}`, ""},
		{"duplicate tag key", `{"tags":{"note":"a","` + key + `":"x","` + key + `":"evil"}}`, ""},
		{"duplicate tags member", `{"tags":{"note":"a"},"tags":{"` + key + `":"evil"}}`, ""},
		{"case-variant tags member", `{"tags":{"note":"a"},"Tags":{"` + key + `":"evil"}}`, ""},
		{"long-s tags member", `{"tags":{"note":"a"},"tag\u017f":{"` + key + `":"evil"}}`, ""},
		{"long-s owner key", `{"tags":{"re\u017fident-install-id":"evil"}}`, ""},
		{"Kelvin-sign member", `{"tags":{"note":"a"}}`, `,"\u212aind":"x"`},
		{"escaped owner key", `{"tags":{"resident\u002dinstall-id":"evil"}}`, ""},
		{"owner key with NUL", `{"tags":{"resident-install-id\u0000":"evil"}}`, ""},
		{"spec tags", `{"spec":{"tags":{"` + key + `":"evil"}},"tags":{}}`, ""},
		{"duplicate params member", `{"tags":{"note":"a"}}`, `,"params":{"tags":{"` + key + `":"evil"}}`},
		{"case-variant params member", `{"tags":{"note":"a"}}`, `,"Params":{"tags":{"` + key + `":"evil"}}`},
		{"long-s params member", `{"tags":{"note":"a"}}`, `,"param\u017f":{"tags":{"` + key + `":"evil"}}`},
		{"long-s jsonrpc member", `{"tags":{"` + key + `":"evil"}}`, `,"j\u017fonrpc":"2.0"`},
		{"duplicate method", `{"tags":{"` + key + `":"evil"}}`, `,"method":"sandbox/list_owned"`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.t = t
			id := 1000 + i
			body := `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"sandbox/create","params":` + c.params + c.top + `}`
			h.sendRaw(body)
			m := h.await(itoa(id))
			if m.Error != nil {
				t.Logf("refused: %d %s: %s", m.Error.Code, m.Error.Data.Kind, m.Error.Message)
				if m.Error.Data.Kind != protocol.KindInvalidRequest {
					t.Fatalf("refused with kind %s, want invalid_request", m.Error.Data.Kind)
				}
				return
			}
			t.Logf("accepted: %s", m.Result)
		})
	}
	h.t = t
	// Whatever was accepted, every sandbox the provider holds carries the
	// owner tag with this install's value, and no other owner spelling.
	fake.mu.Lock()
	defer fake.mu.Unlock()
	for id, b := range fake.boxes {
		if b.Tags[key] != "test-install" {
			t.Errorf("sandbox %s has owner %q: smuggled", id, b.Tags[key])
		}
		for k, v := range b.Tags {
			if k != key && (strings.EqualFold(k, key) || strings.Contains(strings.ToLower(k), "install") || v == "evil") {
				t.Errorf("sandbox %s carries %q=%q: an owner look-alike got through", id, k, v)
			}
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
