package tests

import (
	"os"
	"strings"
	"testing"

	"github.com/resident-dev/resident/provider/docker/dockertest"
)

// providerImages is the image a generic session's sandboxes run, per
// provider: local records an image and ignores it; docker needs a real one,
// made from nothing by ImageFor. Adding a provider to the generic tests
// means adding it here and to Providers' probe, not copying tests.
var providerImages = map[string]string{"local": "ignored-by-local"}

// Providers are the providers the generic tests run on, in order: the
// comma-separated RESIDENT_PROVIDERS, or by default local and, when an
// engine answers at DOCKER_HOST, docker. Under CI=true docker is always in
// the default list, so a missing engine fails instead of shrinking the run.
func Providers() []string {
	if list := os.Getenv("RESIDENT_PROVIDERS"); list != "" {
		var out []string
		for _, name := range strings.Split(list, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out = append(out, name)
			}
		}
		return out
	}
	out := []string{"local"}
	if dockertest.Required() || dockertest.Ping() == nil {
		out = append(out, "docker")
	}
	return out
}

// ImageFor is the image sandboxes of provider run in generic tests; for
// docker it imports busybox into the engine (once per test binary), failing
// t when there is no engine.
func ImageFor(t testing.TB, provider string) string {
	t.Helper()
	switch provider {
	case "docker":
		busybox, _, err := dockertest.Images(dockertest.Need(t))
		if err != nil {
			t.Fatal(err)
		}
		return busybox
	default:
		image, ok := providerImages[provider]
		if !ok {
			t.Fatalf("provider %q is not one the generic tests know (RESIDENT_PROVIDERS)", provider)
		}
		return image
	}
}
