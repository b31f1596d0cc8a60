package hardening

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
)

// registrable reports whether v carries enough non-space bytes to be worth
// masking. Shorter values would mask ordinary words and digits all over the
// output, and they also bound how far the matcher's window can skip.
func registrable(v string) bool {
	return len(strings.TrimSpace(v)) >= MinSecretLen
}

// formsOf returns every literal form under which value is masked, or nil if
// value is degenerate. Multi-line values (PEM keys) are registered whole, with
// LF and CRLF line endings and without the trailing newline that shells and
// templates like to drop, and line by line, because a tool that prints the
// key often reflows or prefixes it.
func formsOf(value string) []string {
	if !registrable(value) {
		return nil
	}
	set := make(map[string]struct{})
	if !strings.ContainsAny(value, "\r\n") {
		addEncodings(set, value)
		if t := strings.TrimSpace(value); t != value {
			addEncodings(set, t)
		}
	} else {
		lf := strings.ReplaceAll(value, "\r\n", "\n")
		trimmed := strings.TrimRight(lf, "\n")
		for _, whole := range []string{lf, trimmed} {
			addEncodings(set, whole)
			addEncodings(set, strings.ReplaceAll(whole, "\n", "\r\n"))
		}
		for line := range strings.SplitSeq(lf, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if registrable(line) {
				addEncodings(set, line)
				addEncodings(set, strings.TrimSpace(line))
			}
		}
	}
	// Every frame is scrubbed as JSON text, where a form holding a quote, a
	// backslash or one of <>& (the URL-path, userinfo and Go-quoted forms
	// of such a secret) is spelled escaped: "%2Fa&b" becomes "%2Fa\u0026b".
	// Registering each form's escaped spelling catches it there too.
	out := make([]string, 0, 2*len(set))
	for f := range set {
		out = append(out, f)
	}
	for _, f := range out[:len(out):len(out)] {
		for _, html := range []bool{true, false} {
			if e := jsonInner(f, html); e != f {
				if _, dup := set[e]; !dup && len(e) >= MinSecretLen {
					set[e] = struct{}{}
					out = append(out, e)
				}
			}
		}
	}
	return out
}

// addEncodings adds v and the encodings a process is likely to print it in.
// Forms identical to one already present collapse in the set; forms shorter
// than MinSecretLen are dropped because they would match noise.
func addEncodings(set map[string]struct{}, v string) {
	add := func(f string) {
		if len(f) >= MinSecretLen {
			set[f] = struct{}{}
		}
	}
	add(v)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		add(enc.EncodeToString([]byte(v)))
		raw := enc.WithPadding(base64.NoPadding)
		add(raw.EncodeToString([]byte(v)))
		for align := range 3 {
			add(base64Stable(raw, v, align))
		}
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	add(jsonInner(v, true))
	add(jsonInner(v, false))
	q := strconv.Quote(v)
	add(q[1 : len(q)-1])
}

// base64Stable returns the part of the encoding of v that does not depend on
// the bytes around it when v starts align bytes into a base64 group: the
// first and last characters mix bits of v with bits of its neighbours, so
// they are trimmed. This catches a secret embedded in a larger encoded blob
// (a basic-auth header, a JSON config base64'd into an env var).
func base64Stable(enc *base64.Encoding, v string, align int) string {
	buf := make([]byte, align+len(v))
	copy(buf[align:], v)
	s := enc.EncodeToString(buf)
	// Character k carries bits [6k, 6k+6); keep those wholly inside v's bits.
	lo := (8*align + 5) / 6
	hi := 8 * len(buf) / 6
	if hi <= lo {
		return ""
	}
	return s[lo:hi]
}

// jsonInner returns v as encoding/json writes it inside a string, with and
// without the HTML-safe escapes of <, > and & (json.Marshal uses them,
// an Encoder with SetEscapeHTML(false) does not).
func jsonInner(v string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}
