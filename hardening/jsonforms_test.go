package hardening

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// A form that holds a quote, a backslash or one of <>& is spelled escaped
// inside a JSON frame: the URL-path or userinfo escape of a secret keeps its
// '&', which json.Marshal writes as \u0026, and its Go-quoted form gains
// another layer of backslashes. Those spellings must be caught in JSON text
// too (they once passed through error messages).
func TestEncodedFormsInsideJSONText(t *testing.T) {
	const secret = `rich/Canary&7f3a<9c>21 e5+b8"q\d06`
	s := New()
	if !s.AddSecret(secret) {
		t.Fatal("not registered")
	}
	quoted := strconv.Quote(secret)
	userinfo := url.UserPassword("u", secret).String()[2:]
	for name, text := range map[string]string{
		"url-path":     "GET https://h/v2/" + url.PathEscape(secret) + " failed",
		"url-userinfo": "GET https://bot:" + userinfo + "@h/ failed",
		"go-quoted":    "exec_id " + quoted + " was already used",
	} {
		for _, html := range []bool{true, false} {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(map[string]string{"message": text}); err != nil {
				t.Fatal(err)
			}
			out := string(s.ScrubJSON([]byte(b.String())))
			var back map[string]string
			if err := json.Unmarshal([]byte(out), &back); err != nil {
				t.Fatalf("%s (html %v): scrubbed JSON is invalid: %v: %s", name, html, err, out)
			}
			if strings.Contains(back["message"], quoted[1:len(quoted)-1]) || strings.Contains(back["message"], url.PathEscape(secret)) ||
				strings.Contains(back["message"], userinfo) || !strings.Contains(back["message"], Mask) {
				t.Errorf("%s (html %v): secret survives in %q", name, html, back["message"])
			}
		}
	}
}
