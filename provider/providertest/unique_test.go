package providertest

import "testing"

// Every owner the suite makes is recognised as the suite's, and names of
// other tests are not.
func TestMadeBySuiteKnowsTheSuitesOwners(t *testing.T) {
	base := uniqueName("install")
	for _, id := range []string{base, uniqueName("other"), "intruder-" + base, "evil-" + base, "unused-" + base} {
		if !MadeBySuite(id) {
			t.Errorf("%q is the suite's", id)
		}
	}
	for _, id := range []string{"install-a", "dscript", "vscode-e2e-mj3k2", "x-0123456789ab0", "x-0123456789ag", ""} {
		if MadeBySuite(id) {
			t.Errorf("%q is not the suite's", id)
		}
	}
}
