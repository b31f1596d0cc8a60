package procfs

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	line := "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 12345 678 18446744073709551615"
	s, ok := parseStat(4242, []byte(line))
	if !ok || s.PPID != 1 || s.PGID != 4242 || s.State != 'S' || s.Start != 987654 {
		t.Fatalf("parseStat = %+v, %v", s, ok)
	}
	for _, bad := range []string{"", "12 (x", "12 (x) S", "12 (x) SS 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5", "12 (x) S one 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5"} {
		if _, ok := parseStat(12, []byte(bad)); ok {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
	if (Stat{State: 'Z'}).Zombie() == false || (Stat{State: 'S'}).Zombie() {
		t.Error("Zombie")
	}
}

func TestReadStatOfSelf(t *testing.T) {
	s, ok := ReadStat(os.Getpid())
	if !ok || s.PPID != os.Getppid() || s.Start == 0 {
		t.Fatalf("ReadStat(self) = %+v, %v", s, ok)
	}
	if _, ok := ReadStat(-1); ok {
		t.Fatal("ReadStat(-1) succeeded")
	}
	found := false
	for _, pid := range PIDs() {
		found = found || pid == os.Getpid()
	}
	if !found {
		t.Fatal("PIDs() misses this process")
	}
}
