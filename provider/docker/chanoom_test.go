package docker

import (
	"context"
	"strings"
	"testing"
)

func TestOOMKillCountParsesBothCgroupVersions(t *testing.T) {
	for text, want := range map[string]int64{
		"low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\noom_group_kill 0\n": 2, // v2 memory.events
		"oom_kill_disable 0\nunder_oom 0\noom_kill 7\n":               7, // v1 memory.oom_control
	} {
		if n, ok := oomKillCount(strings.NewReader(text)); !ok || n != want {
			t.Errorf("%q: %d %v; want %d", text, n, ok, want)
		}
	}
	for _, text := range []string{"", "oom 3\n", "oom_kill x\n"} {
		if _, ok := oomKillCount(strings.NewReader(text)); ok {
			t.Errorf("%q parsed as a count", text)
		}
	}
}

// A holder whose count could not be read when its channel opened has no
// count to compare with: no read is made (nor retried), and the exec is
// not called OOM-killed.
func TestOOMGrewWithoutABaselineReadsNothing(t *testing.T) {
	ch := &chanHolder{}
	ch.oomSeen.Store(-1)
	var p Provider
	if p.oomGrew(context.Background(), ch, nil) { // a nil conn: any read would panic
		t.Fatal("oomGrew without a baseline said OOM-killed")
	}
}
