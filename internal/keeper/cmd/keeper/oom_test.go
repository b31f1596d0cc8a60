package main

import "testing"

// A sandbox whose OOM count was unreadable when the exec started has
// nothing to compare with: the read after a SIGKILL is not tried (nor
// retried for half a second), and the kill stays unexplained.
func TestOOMCountAfterAnUnreadableStartIsNotRead(t *testing.T) {
	if n := oomKillsAfter(-1); n != -1 {
		t.Fatalf("oomKillsAfter(-1) = %d, want -1", n)
	}
}

// Where the count is readable at all (this machine's cgroup), one read
// is enough: the retries are for a read that fails.
func TestOOMCountAfterIsTheCountNow(t *testing.T) {
	before := oomKills()
	if before < 0 {
		t.Skip("no memory cgroup counter readable here")
	}
	if n := oomKillsAfter(before); n < before {
		t.Fatalf("oomKillsAfter(%d) = %d, the count went down", before, n)
	}
}
