package provider_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/docker"
	"github.com/resident-dev/resident/provider/kubernetes"
	"github.com/resident-dev/resident/provider/local"
)

// Every built-in provider's policy survives JSON unchanged, so it can be
// announced to a parent resident or a host.
func TestBuiltinSecretPoliciesRoundTrip(t *testing.T) {
	for name, policy := range map[string]provider.SecretPolicy{
		"docker":     (&docker.Provider{}).Secrets(),
		"local":      (&local.Provider{}).Secrets(),
		"kubernetes": (&kubernetes.Provider{}).Secrets(),
	} {
		data, err := json.Marshal(policy)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var back provider.SecretPolicy
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(back.EnvPrefixes, policy.EnvPrefixes) || !reflect.DeepEqual(describe(back.Tokens), describe(policy.Tokens)) {
			t.Fatalf("%s came back as %s", name, data)
		}
	}
}

func describe(tokens []hardening.TokenPattern) []any {
	var out []any
	for _, t := range tokens {
		out = append(out, []any{t.Name, t.Source(), t.Prefixes, t.MaxLen})
	}
	return out
}
