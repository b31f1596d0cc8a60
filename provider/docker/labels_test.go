package docker

import (
	"regexp"
	"strings"
	"testing"
)

// The loop in validID is held to the regexp it replaced.
func TestValidIDMatchesItsRegexp(t *testing.T) {
	reference := regexp.MustCompile(`^[0-9a-f]{64}$`)
	full := strings.Repeat("0123456789abcdef", 4)
	for _, id := range []string{
		full, strings.ToUpper(full), full[:63], full + "0", "", full[:12],
		full[:63] + "g", full[:63] + "\n", "\n" + full[:63], full[:32] + "é" + full[:30],
		strings.Repeat("f", 64), strings.Repeat("/", 64),
	} {
		if got, want := validID(id), reference.MatchString(id); got != want {
			t.Errorf("validID(%q) = %v, the regexp says %v", id, got, want)
		}
	}
}
