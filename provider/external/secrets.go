package external

import (
	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/provider"
	"github.com/resident-dev/resident/provider/external/wire"
)

// policyOf turns the provider's announced secrets into the scrubber's
// patterns; hardening.CompileTokenPattern derives literal prefixes and the
// longest match when the provider left them out, and refuses a pattern that
// cannot be bounded.
func policyOf(s wire.Secrets) (provider.SecretPolicy, error) {
	out := provider.SecretPolicy{EnvPrefixes: append([]string{}, s.EnvPrefixes...)}
	for _, t := range s.TokenPatterns {
		pat, err := hardening.CompileTokenPattern(t.Name, t.Regexp, t.Prefixes, t.MaxLen)
		if err != nil {
			return out, err
		}
		out.Tokens = append(out.Tokens, pat)
	}
	return out, nil
}
