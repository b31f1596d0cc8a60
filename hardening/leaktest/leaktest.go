// Package leaktest is what every canary test checks output against: the
// forms a leaked secret could take, and a view of frames and log lines with
// every string and base64 data field decoded, so a secret that is only
// visible after decoding is still found. One definition, so the in-process
// tests and the real-binary tests hold every surface to the same standard.
package leaktest

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
)

// Forms are the texts a leaked secret would show up as, by row name: every
// row of the scrubber's form table (hardening.Forms), so a row added there is
// checked on every surface at once. Rows that cannot spell the secret, or
// spell it too short to be registered, are left out.
func Forms(secret string) map[string]string {
	forms := map[string]string{}
	for _, row := range hardening.Forms() {
		if f := row.Spell(secret); len(f) >= hardening.MinSecretLen {
			forms[row.Name] = f
		}
	}
	return forms
}

// NoLeak reports every form of every secret found in text.
func NoLeak(t testing.TB, surface, text string, secrets ...string) {
	t.Helper()
	for _, secret := range secrets {
		for name, form := range Forms(secret) {
			if i := strings.Index(text, form); i >= 0 {
				t.Errorf("%s: canary %.12q... leaks in %s form: ...%q...", surface, secret, name, text[max(0, i-60):min(len(text), i+len(form)+60)])
			}
		}
	}
}

// Masked reports a site that shows no mask, so was not really exercised.
func Masked(t testing.TB, site, text string) {
	t.Helper()
	if !strings.Contains(text, hardening.Mask) {
		t.Errorf("%s was not exercised: no %s in %q", site, hardening.Mask, text)
	}
}

// FramesView is everything a host can read in a stream of frames: the raw
// bytes, every string of every message decoded, and every base64 data field
// decoded.
func FramesView(t testing.TB, raw string) string {
	t.Helper()
	var view strings.Builder
	view.WriteString(raw)
	fr := protocol.NewFrameReader(strings.NewReader(raw), 1<<30)
	for {
		body, err := fr.Read()
		if errors.Is(err, io.EOF) {
			return view.String()
		}
		if err != nil {
			t.Fatalf("stdout does not frame: %v", err)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("a frame is not JSON: %v: %q", err, body)
		}
		decodedStrings(v, "", &view)
	}
}

// LinesView is the same for zap's JSON log lines.
func LinesView(t testing.TB, logs string) string {
	t.Helper()
	var view strings.Builder
	view.WriteString(logs)
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Errorf("a log line is not JSON: %v: %q", err, sc.Text())
			continue
		}
		decodedStrings(v, "", &view)
	}
	return view.String()
}

func decodedStrings(v any, key string, out *strings.Builder) {
	switch t := v.(type) {
	case string:
		out.WriteString("\n" + t)
		if key == "data" {
			if b, err := base64.StdEncoding.DecodeString(t); err == nil {
				out.WriteString("\n")
				out.Write(b)
			}
		}
	case []any:
		for _, e := range t {
			decodedStrings(e, key, out)
		}
	case map[string]any:
		for k, e := range t {
			out.WriteString("\n" + k)
			decodedStrings(e, k, out)
		}
	}
}
