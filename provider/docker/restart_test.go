package docker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// TestResidentChild is the "resident" TestRestartAfterSIGKILL kills: it
// runs only in a child process the test starts.
func TestResidentChild(t *testing.T) {
	installID := os.Getenv("RESIDENT_DOCKER_CHILD")
	if installID == "" {
		t.Skip("runs only as TestRestartAfterSIGKILL's child")
	}
	p, _ := newTestProvider(t)
	owner := provider.Owner{Key: "resident-install-id", InstallID: installID}
	id, err := p.Create(context.Background(), protocol.Spec{Image: testImage}, owner, map[string]string{"job": "left-behind"})
	if err != nil {
		t.Fatal(err)
	}
	proc, err := p.Exec(context.Background(), id, provider.ExecRequest{Argv: []string{"sh", "-c", "trap '' TERM; echo running; sleep 306"}})
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(proc.Stdout()).ReadString('\n')
	fmt.Printf("sandbox %s %s", id, line)
	time.Sleep(time.Hour) // until SIGKILL
}

// A resident killed with SIGKILL leaves its sandbox; a new one with the
// same install id finds it, sees the killed resident's exec gone (the
// keeper kills an exec whose connection vanished), and terminates it.
func TestRestartAfterSIGKILL(t *testing.T) {
	needEngine(t)
	owner := testOwner(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestResidentChild$", "-test.v")
	cmd.Env = append(os.Environ(), "RESIDENT_DOCKER_CHILD="+owner.InstallID)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var id string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "sandbox" && f[2] == "running" {
			id = f[1]
			break
		}
	}
	if id == "" {
		t.Fatal("the child resident did not report its sandbox")
	}
	p, _ := newTestProvider(t)
	t.Cleanup(func() { _, _ = p.Terminate(context.Background(), id) })
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	_ = cmd.Wait()

	list, err := p.ListOwned(testCtx(t), owner)
	if err != nil || len(list) != 1 || list[0].SandboxID != id || list[0].Tags["job"] != "left-behind" || list[0].State != protocol.StateRunning {
		t.Fatalf("ListOwned after the SIGKILL = %+v, %v", list, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ps := processes(t, p, id); strings.Contains(ps, "sleep 306"); ps = processes(t, p, id) {
		if time.Now().After(deadline) {
			t.Fatalf("the dead resident's exec still runs:\n%s", ps)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if existed, err := p.Terminate(testCtx(t), id); !existed || err != nil {
		t.Fatalf("Terminate = %v, %v", existed, err)
	}
	if list, _ := p.ListOwned(testCtx(t), owner); len(list) != 0 {
		t.Fatalf("ListOwned after terminate: %+v", list)
	}
}
