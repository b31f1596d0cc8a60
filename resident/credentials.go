package resident

import (
	"encoding/json"
	"strings"

	"github.com/resident-dev/resident/provider"
)

// secretFieldHints name the fields of a structured credential whose values
// are secret on their own: a Docker config's "password", "auth",
// "identitytoken" and "registrytoken", or a cloud key file's "private_key".
var secretFieldHints = []string{"pass", "token", "secret", "auth", "key", "credential"}

// credentialParts returns the secrets nested inside the credential value of
// key: the ones the provider finds in its own format (CredentialSecrets: a
// Docker config's base64 "auth"), then, for a value that is a JSON document,
// each secret-looking string field. The whole value is registered anyway,
// but a registry or tool that echoes one part (a password in an error, a
// token in a URL) would show that part alone.
func credentialParts(prov provider.Provider, key, value string) []string {
	var parts []string
	if cs, ok := prov.(provider.CredentialSecrets); ok {
		parts = cs.CredentialSecrets(key, value)
	}
	return append(parts, jsonSecretFields(value)...)
}

// jsonSecretFields: the string fields of a JSON document whose names look
// secret, at any depth.
func jsonSecretFields(value string) []string {
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
