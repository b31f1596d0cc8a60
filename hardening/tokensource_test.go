package hardening

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A pattern is data: it marshals with its regexp as source text and comes
// back compiled, scrubbing exactly as before.
func TestTokenPatternRoundTripsThroughJSON(t *testing.T) {
	in := []TokenPattern{
		{Name: "gh", Prefixes: []string{"ghp_", "gho_"}, Regexp: regexp.MustCompile(`gh[po]_[A-Za-z0-9]{36}`), MaxLen: 40},
		{Name: "open", Prefixes: []string{"sk-"}, Regexp: regexp.MustCompile(`sk-[a-z]+`), MaxLen: 64},
	}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"regexp":"gh[po]_[A-Za-z0-9]{36}"`) {
		t.Fatalf("the regexp is not its source text: %s", data)
	}
	var out []TokenPattern
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if out[i].Name != in[i].Name || out[i].Source() != in[i].Source() || !slices.Equal(out[i].Prefixes, in[i].Prefixes) || out[i].MaxLen != in[i].MaxLen {
			t.Fatalf("pattern %d came back as %+v", i, out[i])
		}
	}
	token := "ghp_" + strings.Repeat("a", 36)
	if got := string(New(out...).Scrub([]byte("x " + token + " y"))); got != "x [REDACTED] y" {
		t.Fatalf("the decoded patterns scrub %q", got)
	}
}

// Written by hand, a pattern's prefixes and length are derived; one that
// cannot be bounded or prefiltered is refused, never half-built.
func TestTokenPatternFromJSONDerivesOrRefuses(t *testing.T) {
	var p TokenPattern
	if err := json.Unmarshal([]byte(`{"name":"gl","regexp":"glpat-[A-Za-z0-9]{20}"}`), &p); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Prefixes, []string{"glpat-"}) || p.MaxLen != 26 {
		t.Fatalf("derived %q, %d", p.Prefixes, p.MaxLen)
	}
	for _, bad := range []string{
		`{"name":"star","regexp":"tok_.+"}`,
		`{"name":"noprefix","regexp":"[a-z]{3}"}`,
		`{"name":"syntax","regexp":"ab("}`,
		`{"name":"long","regexp":"ab","prefixes":["abc"],"max_len":2}`,
	} {
		if err := json.Unmarshal([]byte(bad), &p); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}
