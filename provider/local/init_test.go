package local_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// An isolated sandbox is one set of namespaces with the keeper as its pid
// 1, started at create, outliving the resident, ended at terminate.

// initPID is the host pid of the sandbox's init, from its init.json.
func initPID(t *testing.T, state, id string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(state, "local", "sandboxes", id, "init.json"))
	must(t, err)
	var rec struct {
		PID int `json:"pid"`
	}
	must(t, json.Unmarshal(data, &rec))
	if rec.PID <= 0 || !alive(rec.PID) {
		t.Fatalf("the sandbox's init %d does not run", rec.PID)
	}
	return rec.PID
}

func isolatedIn(t *testing.T, state string, spec protocol.Spec) (provider.Provider, string) {
	t.Helper()
	needIsolation(t)
	p := open(t, state)
	id, err := p.Create(context.Background(), spec, owner, nil)
	must(t, err)
	t.Cleanup(func() { open(t, state).Terminate(context.Background(), id) })
	return p, id
}

// TestExecsShareTheSandboxPidNamespace: a service one exec left is seen by
// the next, as on Docker, and the keeper is pid 1.
func TestExecsShareTheSandboxPidNamespace(t *testing.T) {
	state := t.TempDir()
	p, id := isolatedIn(t, state, protocol.Spec{})
	if out, code := sh(t, p, id, "", "(exec sleep 2000.4545 >/dev/null 2>&1 &); echo started"); code != 0 || out != "started\n" {
		t.Fatalf("service: %d %q", code, out)
	}
	out, code := sh(t, p, id, "", `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done 2>/dev/null`)
	if code != 0 || !strings.Contains(out, "sleep 2000.4545") {
		t.Fatalf("the next exec does not see the service: %d %q", code, out)
	}
	if comm, _ := sh(t, p, id, "", "cat /proc/1/comm"); comm != "keeper\n" {
		t.Errorf("pid 1 is %q, want the keeper", comm)
	}
}

// TestTheInitCannotBeKilledOrReadFromInside: root in the sandbox cannot
// signal its pid 1, nor follow or open its descriptors (the listening
// socket, the channel's connections, its log), nor read its environment or
// memory; the sandbox goes on working with the same init. (The descriptor
// numbers are listable: a non-dumpable process's /proc entries belong to
// root, which the commands are, but nothing behind them is reachable.)
func TestTheInitCannotBeKilledOrReadFromInside(t *testing.T) {
	state := t.TempDir()
	p, id := isolatedIn(t, state, protocol.Spec{})
	before := initPID(t, state, id)
	script := `kill -9 1 2>/dev/null && echo killed; kill -TERM 1 2>/dev/null && echo termed
for f in /proc/1/fd/*; do readlink $f 2>/dev/null && echo "link $f"; (echo x > $f) 2>/dev/null && echo "wrote $f"; (head -c1 $f >/dev/null) 2>/dev/null && echo "read $f"; done
[ -s /proc/1/environ ] && echo environ; head -c1 /proc/1/mem 2>/dev/null && echo mem
ls /proc/1/root/ 2>/dev/null && echo root; echo done`
	out, _ := sh(t, p, id, "", script)
	if out != "done\n" {
		t.Errorf("the sandbox reached its init: %q", out)
	}
	if out, code := sh(t, p, id, "", "echo alive"); code != 0 || out != "alive\n" {
		t.Fatalf("after the attempts: %d %q", code, out)
	}
	if after := initPID(t, state, id); after != before {
		t.Errorf("the init changed: %d, then %d", before, after)
	}
}

// TestSandboxOutlivesTheResidentAndIsTakenOver: a resident that goes
// leaves the sandbox running; the next one takes its channel over and
// finds the service the first left, and its terminate ends the init.
func TestSandboxOutlivesTheResidentAndIsTakenOver(t *testing.T) {
	state := t.TempDir()
	first, id := isolatedIn(t, state, protocol.Spec{})
	pid := initPID(t, state, id)
	sh(t, first, id, "", "(exec sleep 2000.4646 >/dev/null 2>&1 &)")
	must(t, first.Close())
	if !alive(pid) {
		t.Fatal("the init died with the resident")
	}
	later := open(t, state)
	out, code := sh(t, later, id, "", `for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < $f; echo; done 2>/dev/null`)
	if code != 0 || !strings.Contains(out, "sleep 2000.4646") {
		t.Fatalf("the later resident is not in the same sandbox: %d %q", code, out)
	}
	if got := initPID(t, state, id); got != pid {
		t.Errorf("a new init %d, want %d taken over", got, pid)
	}
	existed, err := later.Terminate(context.Background(), id)
	if err != nil || !existed {
		t.Fatalf("terminate: %v %v", existed, err)
	}
	await(t, func() bool { return !alive(pid) })
}

// TestLifetimeIsHeldByTheKeeper: with no resident left, the sandbox still
// ends when its lifetime does.
func TestLifetimeIsHeldByTheKeeper(t *testing.T) {
	state := t.TempDir()
	p, id := isolatedIn(t, state, protocol.Spec{LifetimeS: 1})
	pid := initPID(t, state, id)
	must(t, p.Close()) // no timer of the resident's is left
	await(t, func() bool { return !alive(pid) })
}

// TestSandboxEtcIsItsOwn: no host accounts or secrets; passwd holds root;
// the resolver only where the sandbox has the host's network.
func TestSandboxEtcIsItsOwn(t *testing.T) {
	state := t.TempDir()
	p, id := isolatedIn(t, state, protocol.Spec{})
	for _, f := range []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/etc/ssl/private", "/etc/machine-id", "/etc/resolv.conf"} {
		if out, code := sh(t, p, id, "", "ls -d "+f); code == 0 {
			t.Errorf("the sandbox sees %s: %q", f, out)
		}
	}
	passwd, _ := sh(t, p, id, "", "cat /etc/passwd")
	if !strings.HasPrefix(passwd, "root:x:0:0:") {
		t.Errorf("passwd = %q", passwd)
	}
	hostPasswd, _ := os.ReadFile("/etc/passwd")
	for _, line := range strings.Split(string(hostPasswd), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && name != "root" && name != "nobody" && strings.Contains(passwd, name+":") {
			t.Errorf("host account %q in the sandbox's passwd", name)
		}
	}
	if out, code := sh(t, p, id, "", "id -un; touch /etc/x"); code == 0 || !strings.HasPrefix(out, "root\n") {
		t.Errorf("id/touch /etc: %d %q", code, out)
	}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		hostNet, idNet := isolatedIn(t, state, protocol.Spec{Network: "host"})
		if out, code := sh(t, hostNet, idNet, "", "cat /etc/resolv.conf >/dev/null && echo ok"); code != 0 || out != "ok\n" {
			t.Errorf("network host: no resolv.conf: %d %q", code, out)
		}
	}
}
