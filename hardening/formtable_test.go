package hardening

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// tableSecret has something for every row to escape: URL and JSON specials,
// \b and \f, non-ASCII letters and an astral rune.
const tableSecret = "Tbl/Canary&<9c> e5+\"q\\\b\f-grüße😀"

// TestEveryRowIsMasked plants each row's form of tableSecret in plain text,
// in a JSON frame and in a zap log line (as is and Go-quoted), and checks that it is masked and
// that no row's form survives.
func TestEveryRowIsMasked(t *testing.T) {
	s := New()
	if !s.AddSecret(tableSecret) {
		t.Fatal("not registered")
	}
	for _, row := range Forms() {
		form := row.Spell(tableSecret)
		t.Run(row.Name, func(t *testing.T) {
			if form == "" {
				t.Fatal("the row cannot spell the table secret")
			}
			got := s.ScrubString("<" + form + ">")
			if got != "<"+Mask+">" {
				t.Errorf("plain text: got %q", got)
			}
			// As a message quotes it, plainly or with %q, in a frame and in
			// a log line.
			for _, msg := range []string{"see " + form, "cwd " + strconv.Quote(form) + ": not found"} {
				frame, _ := json.Marshal(map[string]string{"message": msg})
				checkJSONMasked(t, "frame", s, s.ScrubJSON(frame))
				checkJSONMasked(t, "zap line", s, s.ScrubJSON(zapLine(t, msg)))
			}
		})
	}
}

func checkJSONMasked(t *testing.T, where string, s *Scrubber, out []byte) {
	t.Helper()
	var back map[string]any
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("%s: scrubbed JSON is invalid: %v: %s", where, err, out)
	}
	msg, _ := back["message"].(string)
	if msg == "" {
		msg, _ = back["msg"].(string)
	}
	if !strings.Contains(msg, Mask) {
		t.Errorf("%s: not masked: %q", where, msg)
	}
	for _, row := range Forms() {
		if f := row.Spell(tableSecret); strings.Contains(msg, f) || bytes.Contains(out, []byte(f)) {
			t.Errorf("%s: the %s form survives in %s", where, row.Name, out)
		}
	}
}

// zapLine is one log line as the resident's logger encodes it.
func zapLine(t *testing.T, msg string) []byte {
	t.Helper()
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	buf, err := enc.EncodeEntry(zapcore.Entry{Message: msg}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestControlCharacterSecretInZapLog: zap writes \b and \f as \u0008 and
// \u000c, where encoding/json writes \b and \f.
func TestControlCharacterSecretInZapLog(t *testing.T) {
	const secret = "ctl\bpass\fword-91"
	s := New()
	s.AddSecret(secret)
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	buf, err := enc.EncodeEntry(zapcore.Entry{Message: "dial"}, []zapcore.Field{zap.String("token", secret), zap.Error(strconv.ErrSyntax), zap.String("url", "https://h/?t="+url.QueryEscape(secret))})
	if err != nil {
		t.Fatal(err)
	}
	line := buf.Bytes()
	if !bytes.Contains(line, []byte(`\u0008`)) {
		t.Fatalf("zap no longer writes \\u0008: %s", line)
	}
	out := s.ScrubJSON(line)
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("invalid JSON: %v: %s", err, out)
	}
	if back["token"] != Mask {
		t.Errorf("token field: %q", back["token"])
	}
}

// TestASCIIOnlyJSONSecret: json.dumps in Python writes every non-ASCII rune
// as \uXXXX and an astral one as a surrogate pair; Jackson's ASCII mode the
// same in upper-case hex. The spellings are literal, not computed.
func TestASCIIOnlyJSONSecret(t *testing.T) {
	const secret = "grüße-Pass😀word"
	s := New()
	s.AddSecret(secret)
	s.AddSecret("a\x7fb\x00c\x1f/")
	for _, printed := range []string{
		`{"password": "gr\u00fc\u00dfe-Pass\ud83d\ude00word"}`,
		`{"password": "gr\u00FC\u00DFe-Pass\uD83D\uDE00word"}`,
		`{"password": "a\u007fb\u0000c\u001f/"}`,
	} {
		if got := s.ScrubString(printed); got != `{"password": "`+Mask+`"}` {
			t.Errorf("%s: got %s", printed, got)
		}
		// The same text quoted once more, in an error message of a frame.
		frame, _ := json.Marshal(map[string]string{"message": "config " + printed})
		if out := s.ScrubJSON(frame); bytes.Contains(out, []byte(`\\u00`)) || !bytes.Contains(out, []byte(Mask)) {
			t.Errorf("inside a frame: %s", out)
		}
	}
}

// TestZapInnerIsZap holds the json-zap row to what zap writes, for every
// ASCII byte, non-ASCII runes, the line separators and invalid UTF-8.
func TestZapInnerIsZap(t *testing.T) {
	var inputs []string
	for c := range 0x80 {
		inputs = append(inputs, "a"+string(rune(c))+"b")
	}
	inputs = append(inputs, "grüße", "😀", "\u2028\u2029", "bad\xff\xfeutf8", "\xe2\x82", "<&>")
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{})
	for _, in := range inputs {
		buf, err := enc.EncodeEntry(zapcore.Entry{}, []zapcore.Field{zap.String("k", in)})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(buf.String()), `{"k":"`), `"}`)
		if got := zapInner(in); got != want {
			t.Errorf("zapInner(%q) = %q, zap writes %q", in, got, want)
		}
	}
}

// TestRowsDecodeBack checks every whole form against the decoder a host
// would use: each must give the value back, so a row is what it claims.
func TestRowsDecodeBack(t *testing.T) {
	for _, v := range []string{tableSecret, "plain-alnum-123", "x\x01\x1f\x7fy€"} {
		for _, row := range Forms() {
			if row.Fragment {
				continue
			}
			form := row.Spell(v)
			if got, err := decodeRow(row.Name, form); err != nil || got != v {
				t.Errorf("%s of %q = %q decodes to %q, %v", row.Name, v, form, got, err)
			}
		}
	}
}

// decodeRow is the decoder a consumer of each row's output would call.
func decodeRow(name, form string) (string, error) {
	switch {
	case name == "raw":
		return form, nil
	case strings.HasPrefix(name, "json"):
		var s string
		err := json.Unmarshal([]byte(`"`+form+`"`), &s)
		return s, err
	case strings.HasPrefix(name, "go-quoted"):
		return strconv.Unquote(`"` + form + `"`)
	case name == "url-query":
		return url.QueryUnescape(form)
	case strings.HasPrefix(name, "url-") || strings.HasPrefix(name, "percent-"):
		return url.PathUnescape(form)
	}
	encs := map[string]*base64.Encoding{"base64-std": base64.StdEncoding, "base64-std-raw": base64.RawStdEncoding,
		"base64-url": base64.URLEncoding, "base64-url-raw": base64.RawURLEncoding}
	b, err := encs[name].DecodeString(form)
	return string(b), err
}
