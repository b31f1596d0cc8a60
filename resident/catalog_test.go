package resident

import (
	"testing"

	"github.com/resident-dev/resident/protocol"
)

// TestDispatchMatchesCatalog keeps the served methods and protocol.Catalog,
// from which the wire's schema is generated, the same set.
func TestDispatchMatchesCatalog(t *testing.T) {
	inCatalog := map[string]bool{}
	for _, c := range protocol.Catalog {
		if !c.FromHost || c.Notification {
			continue
		}
		inCatalog[c.Method] = true
		if _, ok := methods[c.Method]; !ok {
			t.Errorf("protocol.Catalog has %q, which the resident does not serve", c.Method)
		}
	}
	for name := range methods {
		if !inCatalog[name] {
			t.Errorf("the resident serves %q, which protocol.Catalog lacks", name)
		}
	}
}
