package hardening

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

const pem = "-----BEGIN TEST KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==\n-----END TEST KEY-----\n"

var scrubCases = []struct {
	name    string
	secrets []string
	tokens  bool
	in      string
	want    string
}{
	{"no secrets", nil, false, "hello world", "hello world"},
	{"middle", []string{"hunter22"}, false, "pw=hunter22;", "pw=[REDACTED];"},
	{"whole input", []string{"hunter22"}, false, "hunter22", "[REDACTED]"},
	{"twice", []string{"hunter22"}, false, "hunter22 hunter22", "[REDACTED] [REDACTED]"},
	{"adjacent stay apart", []string{"hunter22"}, false, "hunter22hunter22", "[REDACTED][REDACTED]"},
	{"almost", []string{"hunter22"}, false, "hunter2 hunter2", "hunter2 hunter2"},
	{"nested longest wins", []string{"temp4now", "temp4now111dd"}, false, "a temp4now111dd b", "a [REDACTED] b"},
	{"nested shorter only", []string{"temp4now", "temp4now111dd"}, false, "a temp4now111d b", "a [REDACTED]111d b"},
	{"contained later", []string{"xxtemp4nowyy", "temp4now"}, false, "-xxtemp4nowyy-", "-[REDACTED]-"},
	{"overlap merges", []string{"abcdefgh", "efghijkl"}, false, "0abcdefghijkl1", "0[REDACTED]1"},
	{"overlap chain", []string{"abcdefgh", "efghijkl", "ijklmnop"}, false, "abcdefghijklmnop!", "[REDACTED]!"},
	{"trimmed value", []string{"  s3cr3t-value\t"}, false, "x s3cr3t-value x", "x [REDACTED] x"},
	{"base64", []string{"open sesame!"}, false, "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("open sesame!")), "Authorization: Basic [REDACTED]"},
	{"base64 url unpadded", []string{"0pen?ses>me"}, false, "t=" + base64.RawURLEncoding.EncodeToString([]byte("0pen?ses>me")) + ".", "t=[REDACTED]."},
	{"query escape", []string{"p@ss w0rd/+?&"}, false, "u?pw=" + url.QueryEscape("p@ss w0rd/+?&") + "&x=1", "u?pw=[REDACTED]&x=1"},
	{"path escape", []string{"p@ss w0rd/+?&"}, false, "/a/" + url.PathEscape("p@ss w0rd/+?&") + "/b", "/a/[REDACTED]/b"},
	{"go quote", []string{"tab\there\"q\\"}, false, fmt.Sprintf("v=%q", "tab\there\"q\\"), `v="[REDACTED]"`},
	{"token", nil, true, "tok ghp_0123456789abcdefghijABCDEFGHIJ012345 end", "tok [REDACTED] end"},
	{"token too short", nil, true, "tok ghp_0123456789 end", "tok ghp_0123456789 end"},
	{"token at end", nil, true, "ghp_0123456789abcdefghijABCDEFGHIJ012345", "[REDACTED]"},
	{"token overlaps secret", []string{"abcdefghijABCD"}, true, "ghp_0123456789abcdefghijABCDEFGHIJ012345FG", "[REDACTED]FG"},
	{"pem lf", []string{pem}, false, "key:\n" + pem + "done", "key:\n[REDACTED]done"},
	{"pem crlf", []string{pem}, false, strings.ReplaceAll(pem, "\n", "\r\n"), "[REDACTED]"},
	{"pem no trailing newline", []string{pem}, false, strings.TrimSpace(pem) + "!", "[REDACTED]!"},
	{"pem reflowed", []string{pem}, false, strings.ReplaceAll(pem, "\n", " | "), "[REDACTED] | [REDACTED] | [REDACTED] | [REDACTED] | "},
}

func newScrubber(secrets []string, tokens bool) *Scrubber {
	s := New()
	if tokens {
		s.AddPatterns(githubToken)
	}
	for _, v := range secrets {
		s.AddSecret(v)
	}
	return s
}

func TestScrubTable(t *testing.T) {
	for _, tc := range scrubCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScrubber(tc.secrets, tc.tokens)
			if got := s.ScrubString(tc.in); got != tc.want {
				t.Errorf("Scrub(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if got := s.AppendScrub([]byte("<"), []byte(tc.in)); string(got) != "<"+tc.want {
				t.Errorf("AppendScrub = %q", got)
			}
			if got := naiveScrub(s, []byte(tc.in)); string(got) != tc.want {
				t.Errorf("reference disagrees with the table: %q", got)
			}
			for _, mode := range writeModes {
				if got := streamChunks(t, s, mode.split([]byte(tc.in))); string(got) != tc.want {
					t.Errorf("%s stream\n got %q\nwant %q", mode.name, got, tc.want)
				}
			}
		})
	}
}

// TestStreamEverySplit writes each case split at every position, and at
// every pair of positions for short inputs, each piece once as one write and
// once byte by byte.
func TestStreamEverySplit(t *testing.T) {
	for _, tc := range scrubCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScrubber(tc.secrets, tc.tokens)
			in := []byte(tc.in)
			check := func(chunks [][]byte) {
				t.Helper()
				if got := streamChunks(t, s, chunks); string(got) != tc.want {
					t.Fatalf("chunks %q\n got %q\nwant %q", chunks, got, tc.want)
				}
			}
			for i := 0; i <= len(in); i++ {
				check(splitAt(in, i))
				check(append(bytewise(in[:i]), in[i:]))
				check(append([][]byte{in[:i]}, bytewise(in[i:])...))
				if len(in) > 80 {
					continue
				}
				for j := i; j <= len(in); j++ {
					check(splitAt(in, i, j))
				}
			}
		})
	}
}

func TestScrubReturnsSameSlice(t *testing.T) {
	s := newScrubber([]string{"hunter22"}, true)
	in := []byte("nothing to see here, ghp_ but no token")
	if out := s.Scrub(in); &out[0] != &in[0] || len(out) != len(in) {
		t.Fatal("Scrub copied a clean buffer")
	}
	in = []byte("hunter22!")
	out := s.Scrub(in)
	if string(in) != "hunter22!" || string(out) != "[REDACTED]!" {
		t.Fatalf("in %q out %q", in, out)
	}
}

// TestJSONSplice checks that secrets inside JSON text produced by
// encoding/json are masked and that the result is still valid JSON.
func TestJSONSplice(t *testing.T) {
	secret := "a<b>&\"c\\d\x01e\u2028f"
	s := newScrubber([]string{secret}, false)
	for _, html := range []bool{true, false} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(html)
		if err := enc.Encode(map[string]string{"out": "x" + secret + "y"}); err != nil {
			t.Fatal(err)
		}
		got := s.Scrub(buf.Bytes())
		var v map[string]string
		if err := json.Unmarshal(got, &v); err != nil {
			t.Fatalf("html=%v: %s: %v", html, got, err)
		}
		if v["out"] != "x"+Mask+"y" {
			t.Fatalf("html=%v: got %q", html, v["out"])
		}
	}
}
