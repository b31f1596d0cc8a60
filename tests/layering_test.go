package tests

import (
	"os/exec"
	"strings"
	"testing"
)

// The layers above the providers know none of them: the resident core, the
// wire, the Go client and residentctl (a host) build without any provider
// implementation, the keeper or a Docker module, so a new provider or host
// is a room added, never a wall knocked through. residentctl asks the
// resident binary for provider names instead (cmd/residentctl/providers.go).
func TestNoProviderAboveProviders(t *testing.T) {
	const module = "github.com/resident-dev/resident/"
	roots := []string{"./resident/...", "./protocol/...", "./client/...", "./cmd/residentctl"}
	forbidden := []string{
		module + "provider/", // implementations; package provider itself is the contract
		module + "internal/keeper",
		"github.com/moby/", "github.com/docker/", "github.com/containerd/",
	}
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}"}, roots...)
	cmd := exec.Command("go", args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		seen++
		if isAny(pkg, forbidden) {
			continue // reported where it is imported from
		}
		for _, imp := range strings.Fields(imports) {
			if isAny(imp, forbidden) {
				t.Errorf("%s imports %s: no provider's code above provider/", pkg, imp)
			}
		}
	}
	if seen < 4 {
		t.Fatalf("go list saw %d packages:\n%s", seen, out)
	}
}

func isAny(pkg string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(pkg, p) {
			return true
		}
	}
	return false
}
