package kubernetes

import (
	"slices"
	"testing"
)

// An exec's variables lay over the container's in place, once each, as
// "keeper run" merges them on the exec subresource path.
func TestMergeEnv(t *testing.T) {
	base := []string{"PATH=/bin", "HOME=/root", "A=1"}
	got := mergeEnv(slices.Clone(base), []string{"A=2", "NEW=x", "PATH=/usr/bin"})
	want := []string{"PATH=/usr/bin", "HOME=/root", "A=2", "NEW=x"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := mergeEnv(nil, []string{"A=1", "A=2"}); !slices.Equal(got, []string{"A=2"}) {
		t.Fatalf("a name given twice: %q", got)
	}
}
