package resident

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// secretFieldHints name the fields of a structured credential whose values
// are secret on their own: a Docker config's "password", "auth",
// "identitytoken" and "registrytoken", or a cloud key file's "private_key".
var secretFieldHints = []string{"pass", "token", "secret", "auth", "key", "credential"}

// credentialParts returns the secrets nested inside a credential value that
// is a JSON document (the docker provider's docker_auth_config is one). The
// whole value is registered anyway, but a registry or tool that echoes one
// field (a password in an error, a token in a URL) would show that field
// alone, so each secret-looking string field is registered too, and an
// "auth" field that is base64 of "user:password" gives its decoded text and
// its password.
func credentialParts(value string) []string {
	trimmed := strings.TrimSpace(value)
	if trimmed == "" || (trimmed[0] != '{' && trimmed[0] != '[') {
		return nil
	}
	var doc any
	if json.Unmarshal([]byte(trimmed), &doc) != nil {
		return nil
	}
	var parts []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				walk(e, k)
			}
		case []any:
			for _, e := range t {
				walk(e, key)
			}
		case string:
			if !secretField(key) {
				return
			}
			parts = append(parts, t)
			if strings.EqualFold(key, "auth") {
				if dec, err := base64.StdEncoding.DecodeString(t); err == nil {
					parts = append(parts, string(dec))
					if _, pass, ok := strings.Cut(string(dec), ":"); ok {
						parts = append(parts, pass)
					}
				}
			}
		}
	}
	walk(doc, "")
	return parts
}

func secretField(key string) bool {
	key = strings.ToLower(key)
	for _, hint := range secretFieldHints {
		if strings.Contains(key, hint) {
			return true
		}
	}
	return false
}
