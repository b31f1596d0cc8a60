package main

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func ownOOMScore(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Skip("no /proc/self/oom_score_adj here")
	}
	return strings.TrimSpace(string(b))
}

// A child started through the score starts at the top; the starter keeps
// its own.
func TestChildStartsAboveTheKeeper(t *testing.T) {
	own := ownOOMScore(t)
	if own == strconv.Itoa(ChildOOMScoreAdj) {
		t.Skip("this test runs at the top score already")
	}
	o := openOOMScore()
	if o == nil {
		t.Fatal("openOOMScore: nil below the top score")
	}
	defer o.f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	var proc *os.Process
	_, err = o.around(func() (int, error) {
		proc, err = os.StartProcess(cat, []string{"cat", "/proc/self/oom_score_adj"}, &os.ProcAttr{Files: []*os.File{nil, w, os.Stderr}})
		return 0, err
	})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	r.Close()
	_, _ = proc.Wait() // a serving test's reaper may have reaped it first
	if got := strings.TrimSpace(string(out)); got != strconv.Itoa(ChildOOMScoreAdj) {
		t.Fatalf("the child's score: %q, want %d", got, ChildOOMScoreAdj)
	}
	if after := ownOOMScore(t); after != own {
		t.Fatalf("the keeper's score went from %s to %s", own, after)
	}
}

// Without the file (nil) a child keeps the starter's score.
func TestNoScoreFileLeavesTheChildAlone(t *testing.T) {
	var o *oomScore
	ran := false
	if _, err := o.around(func() (int, error) { ran = true; return 0, nil }); err != nil || !ran {
		t.Fatalf("a nil score did not just fork: ran %v, %v", ran, err)
	}
}
