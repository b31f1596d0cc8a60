package docker

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/provider"
)

// The resident reads the keeper proxy's lines as provider.ProxyEvent and
// writes provider.ProxyVerdict; the keeper has its own twins (it cannot
// import provider). They must be the same on the wire.
func TestProxyLinesAreTheKeepers(t *testing.T) {
	same := func(a, b any) {
		ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
		if ta.NumField() != tb.NumField() {
			t.Fatalf("%s has %d fields, %s %d", ta, ta.NumField(), tb, tb.NumField())
		}
		for i := range ta.NumField() {
			fa, fb := ta.Field(i), tb.Field(i)
			if fa.Name != fb.Name || fa.Type != fb.Type || fa.Tag != fb.Tag {
				t.Errorf("%s.%s %s %q differs from %s.%s %s %q", ta, fa.Name, fa.Type, fa.Tag, tb, fb.Name, fb.Type, fb.Tag)
			}
		}
	}
	same(provider.ProxyEvent{}, keeperproto.ProxyEvent{})
	same(provider.ProxyVerdict{}, keeperproto.ProxyVerdict{})
	line, _ := json.Marshal(keeperproto.ProxyEvent{ID: "x", Host: "h", Port: 1})
	var ev provider.ProxyEvent
	if err := json.Unmarshal(line, &ev); err != nil || ev != (provider.ProxyEvent{ID: "x", Host: "h", Port: 1}) {
		t.Fatalf("%s decodes as %+v (%v)", line, ev, err)
	}
}
