package hardening

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strconv"
)

// Form is one spelling of a secret that the scrubber masks. The table
// returned by Forms is the whole of the promise: a secret is masked under
// every row, each row's form as the resident's own output quotes it (see
// InMessages and InFrames), and under nothing else (README, "What the
// scrubber promises").
type Form struct {
	// Name identifies the row in tests and documentation.
	Name string
	// Spell returns value in this form; "" when the form cannot express it.
	Spell func(value string) string
	// Fragment is set for the stable middle of an encoding of a larger text
	// (base64 at a byte alignment): a part of what a process prints, not a
	// whole encoding of the value.
	Fragment bool
	// InMessages is set for the spelling the resident's error messages give
	// a host's string (%q): every form is also registered spelled so.
	InMessages bool
	// InFrames is set for the spellings frames (encoding/json) and log lines
	// (zap) give their strings: every form, and every form as spelled in
	// messages, is also registered spelled so.
	InFrames bool
}

// formTable is the single list of encodings. Rows that coincide for a
// given value (most do, for an alphanumeric one) collapse when registered.
var formTable = []Form{
	{Name: "raw", Spell: func(v string) string { return v }},
	{Name: "json", Spell: func(v string) string { return jsonInner(v, true) }, InFrames: true},
	{Name: "json-no-html", Spell: func(v string) string { return jsonInner(v, false) }, InFrames: true},
	{Name: "json-zap", Spell: zapInner, InFrames: true},
	{Name: "json-ascii", Spell: func(v string) string { return asciiJSONInner(v, lowerHex) }},
	{Name: "json-ascii-upper", Spell: func(v string) string { return asciiJSONInner(v, upperHex) }},
	{Name: "go-quoted", Spell: func(v string) string { return goQuoted(v, strconv.Quote) }, InMessages: true},
	{Name: "go-quoted-ascii", Spell: func(v string) string { return goQuoted(v, strconv.QuoteToASCII) }},
	{Name: "url-query", Spell: url.QueryEscape},
	{Name: "url-path", Spell: url.PathEscape},
	{Name: "url-userinfo", Spell: func(v string) string { return url.UserPassword("u", v).String()[2:] }},
	{Name: "percent-upper", Spell: func(v string) string { return percentAll(v, upperHex) }},
	{Name: "percent-lower", Spell: func(v string) string { return percentAll(v, lowerHex) }},
	{Name: "base64-std", Spell: base64Whole(base64.StdEncoding)},
	{Name: "base64-std-raw", Spell: base64Whole(base64.RawStdEncoding)},
	{Name: "base64-url", Spell: base64Whole(base64.URLEncoding)},
	{Name: "base64-url-raw", Spell: base64Whole(base64.RawURLEncoding)},
	{Name: "base64-std-inner-0", Spell: base64Inner(base64.RawStdEncoding, 0), Fragment: true},
	{Name: "base64-std-inner-1", Spell: base64Inner(base64.RawStdEncoding, 1), Fragment: true},
	{Name: "base64-std-inner-2", Spell: base64Inner(base64.RawStdEncoding, 2), Fragment: true},
	{Name: "base64-url-inner-0", Spell: base64Inner(base64.RawURLEncoding, 0), Fragment: true},
	{Name: "base64-url-inner-1", Spell: base64Inner(base64.RawURLEncoding, 1), Fragment: true},
	{Name: "base64-url-inner-2", Spell: base64Inner(base64.RawURLEncoding, 2), Fragment: true},
}

// Forms returns the table of encodings a secret is masked under, in order.
// Tests iterate it to hold every output surface to every row.
func Forms() []Form { return slices.Clone(formTable) }

// spellAll adds v under every row of the table. Forms shorter than
// MinSecretLen are dropped because they would match noise.
func spellAll(set map[string]struct{}, v string) {
	for _, row := range formTable {
		if f := row.Spell(v); len(f) >= MinSecretLen {
			set[f] = struct{}{}
		}
	}
}

// nestAll adds every form of set as the resident's own output spells it
// when it quotes the form: an error message quotes a host's string with %q,
// and a frame or a log line spells the message again. So each form is added
// as every InMessages row spells it, and then each form so far as every
// InFrames row spells it: a form that holds a quote, a backslash, a control
// character or one of <>& (the URL-path form of such a secret, or its
// ASCII-only JSON) is written escaped there, "%2Fa&b" as "%2Fa\u0026b".
// Deeper nesting is not followed.
func nestAll(set map[string]struct{}) []string {
	out := make([]string, 0, 2*len(set))
	for f := range set {
		out = append(out, f)
	}
	respell := func(use func(Form) bool) {
		for _, f := range out[:len(out):len(out)] {
			for _, row := range formTable {
				if !use(row) {
					continue
				}
				if e := row.Spell(f); len(e) >= MinSecretLen {
					if _, dup := set[e]; !dup {
						set[e] = struct{}{}
						out = append(out, e)
					}
				}
			}
		}
	}
	respell(func(row Form) bool { return row.InMessages })
	respell(func(row Form) bool { return row.InFrames })
	return out
}
