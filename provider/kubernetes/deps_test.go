package kubernetes

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestResidentLinksNoClientset keeps client-go's clientset out of the
// resident binary: its kubernetes/scheme registers every API group at
// package initialisation, in every resident whatever its provider (see
// client.go). The provider's API groups are core/v1 and networking/v1; a
// call on another group gets its registration in apiScheme, not the
// clientset back. It needs no cluster: it reads the build graph.
func TestResidentLinksNoClientset(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list the binary's packages")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/resident-dev/resident/cmd/resident").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/resident-dev/resident/provider/kubernetes") {
		t.Fatal("the resident no longer links the Kubernetes provider: this test checks nothing")
	}
	// Whatever pulls the whole of client-go's typed world in: the
	// clientset and its scheme, discovery (which needs the scheme),
	// apply configurations (an OpenAPI model of every kind).
	banned := []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/discovery", "k8s.io/client-go/applyconfigurations",
		"k8s.io/client-go/gentype", "k8s.io/client-go/openapi"}
	apiGroups := []string{"k8s.io/api/core/v1", "k8s.io/api/networking/v1"}
	for _, d := range deps {
		for _, b := range banned {
			if d == b || strings.HasPrefix(d, b+"/") {
				t.Errorf("the resident links %s", d)
			}
		}
		if strings.HasPrefix(d, "k8s.io/api/") && !slices.Contains(apiGroups, d) {
			t.Errorf("the resident links API group %s (its types register at package init): only %v are the provider's", d, apiGroups)
		}
	}
}
