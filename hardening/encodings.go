package hardening

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

const (
	lowerHex = "0123456789abcdef"
	upperHex = "0123456789ABCDEF"
)

// goQuoted spells v inside a Go string literal, with quote(v) being
// strconv.Quote or strconv.QuoteToASCII.
func goQuoted(v string, quote func(string) string) string {
	if plainText(v) {
		return v
	}
	q := quote(v)
	return q[1 : len(q)-1]
}

// jsonInner returns v as encoding/json writes it inside a string, with and
// without the HTML-safe escapes of <, > and & (json.Marshal uses them,
// an Encoder with SetEscapeHTML(false) does not).
func jsonInner(v string, escapeHTML bool) string {
	if plainText(v) {
		return v // the common case, and the encoder is the cost of AddSecrets
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	return string(out[1 : len(out)-1])
}

// plainText reports whether v is printable ASCII with none of the
// characters a string-quoting row escapes (a quote, a backslash, <>&), so
// that every JSON and Go-quoted row spells it as v: the common case, which
// skips building the same string again.
func plainText(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// zapInner returns v as zap's JSON encoder writes it inside a string: the
// resident's logs. It differs from encoding/json in three ways: control
// characters other than \n, \r and \t are always \u00XX (encoding/json
// writes \b and \f), <>& and U+2028/U+2029 are written as they are, and each
// byte of invalid UTF-8 becomes \ufffd. TestZapInnerIsZap holds it to zap.
func zapInner(v string) string {
	if plainText(v) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		c := v[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(v[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteString(`\ufffd`)
			} else {
				b.WriteString(v[i : i+size])
			}
			i += size
			continue
		}
		appendShortEscape(&b, c, false, lowerHex)
		i++
	}
	return b.String()
}

// asciiJSONInner returns v as an ASCII-only JSON encoder writes it inside a
// string: Python's json.dumps (ensure_ascii, the default) with lower-case
// hex, and others with upper-case hex. Every rune past ASCII is \uXXXX, and
// one past the BMP a UTF-16 surrogate pair; \b, \f, \n, \r and \t are short
// escapes, other control characters and DEL \u00XX. Invalid UTF-8 has no such
// spelling, so the form does not apply to it.
func asciiJSONInner(v string, hex string) string {
	if plainText(v) {
		return v
	}
	if !utf8.ValidString(v) {
		return ""
	}
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == 0x7f: // DEL: json.dumps escapes all but printable ASCII
			appendU4(&b, r, hex)
		case r < utf8.RuneSelf:
			appendShortEscape(&b, byte(r), true, hex)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			appendU4(&b, hi, hex)
			appendU4(&b, lo, hex)
		default:
			appendU4(&b, r, hex)
		}
	}
	return b.String()
}

// appendShortEscape writes one ASCII byte as JSON text: quote and backslash
// escaped, \n \r \t (and \b \f when bf) short, other controls \u00XX.
func appendShortEscape(b *strings.Builder, c byte, bf bool, hex string) {
	switch {
	case c == '"' || c == '\\':
		b.WriteByte('\\')
		b.WriteByte(c)
	case c == '\n':
		b.WriteString(`\n`)
	case c == '\r':
		b.WriteString(`\r`)
	case c == '\t':
		b.WriteString(`\t`)
	case bf && c == '\b':
		b.WriteString(`\b`)
	case bf && c == '\f':
		b.WriteString(`\f`)
	case c < 0x20:
		appendU4(b, rune(c), hex)
	default:
		b.WriteByte(c)
	}
}

func appendU4(b *strings.Builder, r rune, hex string) {
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hex[(r>>shift)&0xF])
	}
}

// percentAll escapes every byte outside RFC 3986's unreserved set
// (A-Z a-z 0-9 - . _ ~) as %XX: Python's urllib.parse.quote(v, safe=""),
// and the strictest spelling of most URL encoders.
func percentAll(v string, hex string) string {
	if !strings.ContainsFunc(v, func(r rune) bool { return !unreserved(r) }) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if unreserved(rune(c)) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}

// unreserved reports whether r is in RFC 3986's unreserved set.
func unreserved(r rune) bool {
	return 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '.' || r == '_' || r == '~'
}

// base64Inner spells the part of the encoding of v that does not depend on
// the bytes around it when v starts align bytes into a base64 group: the
// first and last characters mix bits of v with bits of its neighbours, so
// they are trimmed. This catches a secret embedded in a larger encoded blob
// (a basic-auth header, a JSON config base64'd into an env var).
func base64Inner(enc *base64.Encoding, align int) func(string) string {
	return func(v string) string {
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
}

// base64Whole spells v as a whole base64 encoding.
func base64Whole(enc *base64.Encoding) func(string) string {
	return func(v string) string { return enc.EncodeToString([]byte(v)) }
}
