package main

import (
	"testing"
)

func TestIsRun(t *testing.T) {
	cases := map[string]bool{
		"/.resident/keeper\x00run\x00-token\x00abc\x00--\x00sleep\x001\x00":         true,
		"/.resident/keeper\x00run\x00-token\x00abcd\x00--\x00sleep\x00":             false,
		"/.resident/keeper\x00run\x00--\x00sh\x00-token\x00abc\x00":                 false, // the child's argv
		"/.resident/keeper\x00kill\x00-token\x00abc\x00":                            false,
		"/.resident/keeper\x00run\x00-cwd\x00/w\x00-token\x00abc\x00--\x00true\x00": true,
	}
	for cmdline, want := range cases {
		if got := isRun([]byte(cmdline), "abc"); got != want {
			t.Errorf("isRun(%q) = %v", cmdline, got)
		}
	}
}
