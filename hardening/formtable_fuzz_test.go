package hardening

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzFormRows checks each row of the form table on any value: a whole
// form decodes back to the value with the decoder a consumer would use, and
// once the value is registered, the row's form printed alone is masked with
// no registered form left visible.
func FuzzFormRows(f *testing.F) {
	f.Add("ctl\bpass\fword")
	f.Add("grüße-Pass😀word")
	f.Fuzz(func(t *testing.T, v string) {
		if len(v) > 256 {
			t.Skip()
		}
		for _, row := range Forms() {
			form := row.Spell(v)
			if row.Fragment || form == "" || strings.HasPrefix(row.Name, "json") && !utf8.ValidString(v) {
				continue
			}
			if got, err := decodeRow(row.Name, form); err != nil || got != v {
				t.Errorf("%s of %q = %q decodes to %q, %v", row.Name, v, form, got, err)
			}
		}
		if strings.ContainsAny(v, "[]") || !registrable(v) {
			return // masking could create a form out of Mask itself
		}
		s := New()
		s.AddSecret(v)
		for _, row := range Forms() {
			form := row.Spell(v)
			if len(form) < MinSecretLen {
				continue
			}
			out := s.ScrubString("<" + form + ">")
			if !strings.Contains(out, Mask) {
				t.Errorf("%s form %q of %q not masked: %q", row.Name, form, v, out)
			}
			if left := survivingForm(s, []byte(out)); left != nil {
				t.Errorf("%s form of %q: %q survives in %q", row.Name, v, left, out)
			}
		}
	})
}
