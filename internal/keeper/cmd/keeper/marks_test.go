package main

import (
	"os"
	"slices"
	"testing"
)

func TestProcGroupsOfSelf(t *testing.T) {
	live, groups := procGroups(os.Getpid())
	want, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]int, len(groups))
	for i, g := range groups {
		got[i] = int(g)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !live || !slices.Equal(got, want) {
		t.Fatalf("procGroups(self) = %v %v, want live %v", live, got, want)
	}
}
