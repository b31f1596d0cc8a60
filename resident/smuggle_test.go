package resident

import (
	"encoding/json"
	"strconv"
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

// A session with its own tag prefix cannot hand a sandbox to an install of
// another prefix: every owner-shaped key (<anything>-install-id, any case)
// and every key of the resident's namespace is refused, naming the key, and
// the provider is never asked to create anything.
func TestOwnerShapedTagsAreRefused(t *testing.T) {
	fake := newFake()
	h := startHost(t, fake)
	h.initialize(map[string]any{"tag_prefix": "evil"})
	for _, key := range []string{
		"resident-install-id", "RESIDENT-INSTALL-ID", "Resident-Install-Id", "victim.team/x-install-id", "a-INSTALL-id",
		"evil-install-id", "dev.resident.managed", "DEV.Resident.role", "dev.resident.anything",
	} {
		t.Run(key, func(t *testing.T) {
			h.t = t
			msg := h.callErr(protocol.MethodSandboxCreate, map[string]any{"tags": map[string]string{"note": "n", key: "victim-a"}}, protocol.KindInvalidRequest)
			if !strings.Contains(msg, strconv.Quote(key)) {
				t.Errorf("the refusal %q does not name the key %q", msg, key)
			}
		})
	}
	h.t = t
	if fake.called("create") {
		t.Fatal("the provider was asked to create a sandbox for a refused tag")
	}
	// Tags that merely mention the words are a host's own business.
	h.call(protocol.MethodSandboxCreate, map[string]any{"tags": map[string]string{"install-id": "x", "resident-install-id-copy": "x", "dev.residents": "x"}}, nil)
}

// A sandbox carrying two owner-shaped tags belongs to nobody: the resident
// drops it from a provider's list even when the provider's own filter let
// it through, and no call on its id reaches it.
func TestAmbiguousSandboxBelongsToNobody(t *testing.T) {
	fake := newFake()
	h := startHost(t, fake)
	h.initialize(nil)
	fake.plantTags("ambiguous", map[string]string{"resident-install-id": "test-install", "evil-install-id": "x"})
	fake.plantTags("case-ambiguous", map[string]string{"resident-install-id": "test-install", "RESIDENT-install-id": "test-install"})
	var list protocol.ListOwnedResult
	h.call(protocol.MethodSandboxList, nil, &list)
	if len(list.Sandboxes) != 0 {
		t.Fatalf("list_owned shows %+v; an ambiguous sandbox belongs to nobody", list.Sandboxes)
	}
	for _, id := range []string{"ambiguous", "case-ambiguous"} {
		var owner protocol.ReadOwnerResult
		h.call(protocol.MethodSandboxOwner, map[string]any{"sandbox_id": id}, &owner)
		if owner.Owner != nil {
			t.Errorf("read_owner(%s) = %q, want null", id, *owner.Owner)
		}
		h.callErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": id, "exec_id": "e-" + id, "argv": []string{"echo", "hi"}}, protocol.KindNotFound)
		var term protocol.TerminateResult
		h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": id}, &term)
		if term.Existed || fake.called("terminate "+id) {
			t.Errorf("terminate(%s) reached the sandbox (existed=%v)", id, term.Existed)
		}
	}
}
