package hardening

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestAddSecretDegenerate(t *testing.T) {
	s := New()
	for _, v := range []string{"", "      ", "\t\r\n  \n", "abcde", "  abcde  ", "ab\ncd"} {
		if s.AddSecret(v) {
			t.Errorf("AddSecret(%q) = true", v)
		}
	}
	if s.Len() != 0 {
		t.Fatalf("degenerate values registered %d forms", s.Len())
	}
	if !s.AddSecret("abcdef") {
		t.Fatal("AddSecret(abcdef) = false")
	}
	n := s.Len()
	s.AddSecret("abcdef")
	if s.Len() != n {
		t.Fatalf("re-adding a secret grew Len from %d to %d", n, s.Len())
	}
}

func TestFormsRegistered(t *testing.T) {
	secret := "Pa55<w0rd>&\"x\\/ +?"
	s := New()
	s.AddSecret(secret)
	q := strconv.Quote(secret)
	htmlJSON, _ := json.Marshal(secret)
	want := []string{
		secret,
		base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.RawStdEncoding.EncodeToString([]byte(secret)),
		base64.URLEncoding.EncodeToString([]byte(secret)),
		base64.RawURLEncoding.EncodeToString([]byte(secret)),
		url.QueryEscape(secret),
		url.PathEscape(secret),
		string(htmlJSON[1 : len(htmlJSON)-1]),
		`Pa55<w0rd>&\"x\\/ +?`, // JSON without HTML escapes
		q[1 : len(q)-1],
	}
	for _, w := range want {
		if !formsContain(s, w) {
			t.Errorf("form %q not registered", w)
		}
	}
	for _, f := range s.forms {
		if len(f) < MinSecretLen {
			t.Errorf("form %q shorter than MinSecretLen", f)
		}
	}
}

// TestBase64Embedded puts the secret at every byte offset inside a larger
// base64 blob: only the characters that mix in neighbouring bits may stay.
func TestBase64Embedded(t *testing.T) {
	secret := "correct horse battery"
	s := New()
	s.AddSecret(secret)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
		for pre := 0; pre < 7; pre++ {
			for suf := 0; suf < 4; suf++ {
				raw := strings.Repeat("\xfb", pre) + secret + strings.Repeat("\xff", suf)
				blob := enc.EncodeToString([]byte(raw))
				lo := (8*pre + 5) / 6
				hi := 8 * (pre + len(secret)) / 6
				want := "<" + blob[:lo] + Mask + blob[hi:] + ">"
				if pre == 0 && suf == 0 {
					want = "<" + Mask + ">" // the whole encoding, padding included
				}
				if got := s.ScrubString("<" + blob + ">"); got != want {
					t.Errorf("pre=%d suf=%d: got %q want %q", pre, suf, got, want)
				}
			}
		}
	}
}

func TestMultiLineForms(t *testing.T) {
	s := New()
	if !s.AddSecret(pem) {
		t.Fatal("pem not registered")
	}
	crlf := strings.ReplaceAll(pem, "\n", "\r\n")
	for _, w := range []string{pem, crlf, strings.TrimSuffix(pem, "\n"), strings.TrimSuffix(crlf, "\r\n")} {
		if !formsContain(s, w) {
			t.Errorf("whole form %q missing", w)
		}
	}
	for line := range strings.SplitSeq(strings.TrimSpace(pem), "\n") {
		if !formsContain(s, line) {
			t.Errorf("line %q missing", line)
		}
		// A line printed alone, JSON-escaped or base64'd, is caught.
		for _, in := range []string{line, base64.StdEncoding.EncodeToString([]byte(line))} {
			if got := s.ScrubString(">" + in + "<"); got != ">"+Mask+"<" {
				t.Errorf("line form %q: got %q", in, got)
			}
		}
	}
	js, _ := json.Marshal(map[string]string{"key": pem})
	if got := s.Scrub(js); string(got) != `{"key":"`+Mask+`"}` {
		t.Errorf("JSON-escaped pem: %s", got)
	}
}

func TestShortLinesOfMultiLineSkipped(t *testing.T) {
	s := New()
	s.AddSecret("longline-one\nab\r\nlongline-two\n")
	if formsContain(s, "ab") || formsContain(s, "ab\r") {
		t.Fatal("short line registered")
	}
	if got := s.ScrubString("ab longline-two"); got != "ab "+Mask {
		t.Fatalf("got %q", got)
	}
}
