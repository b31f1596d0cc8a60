package channel

import (
	"bufio"
	"strings"
	"testing"
)

// statusFields reads the command's own /proc/self/status lines of interest.
func statusFields(t *testing.T, c *Conn, user string) map[string]string {
	t.Helper()
	r := run(t, c, ExecSpec{Argv: []string{"sh", "-c", "id -u; id -g; cat /proc/self/status"}, User: user})
	if r.status.Code != 0 {
		t.Fatalf("as %q: %+v", user, r)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Scan()
	out["uid"] = sc.Text()
	sc.Scan()
	out["gid"] = sc.Text()
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// The command holds no capability and cannot gain one, as root and as a
// user: the keeper alone keeps KILL, SETUID, SETGID and SETPCAP.
func TestUserAndCapabilityDrop(t *testing.T) {
	c, _ := openStdio(t)
	if !c.Protected() {
		t.Skip("the keeper runs unprotected (not root): it cannot switch users or drop the bounding set")
	}
	checkUsers(t, c)
}

// The same inside a Docker sandbox, with the sandbox's own /etc/passwd.
func TestSandboxUserAndCapabilityDrop(t *testing.T) {
	_, c := openSandbox(t, 0)
	checkUsers(t, c)
}

func checkUsers(t *testing.T, c *Conn) {
	t.Helper()
	for _, tc := range []struct{ user, uid, gid string }{
		{"", "0", "0"},
		{"nobody", "65534", "65534"},
		{"1234", "1234", "0"},
		{"1234:4321", "1234", "4321"},
	} {
		f := statusFields(t, c, tc.user)
		if f["uid"] != tc.uid || f["gid"] != tc.gid {
			t.Errorf("user %q runs as %s:%s, want %s:%s", tc.user, f["uid"], f["gid"], tc.uid, tc.gid)
		}
		for _, k := range []string{"CapBnd", "CapEff", "CapPrm", "CapInh", "CapAmb"} {
			if strings.Trim(f[k], "0") != "" {
				t.Errorf("user %q: %s %s", tc.user, k, f[k])
			}
		}
		if f["NoNewPrivs"] != "1" {
			t.Errorf("user %q: NoNewPrivs %q", tc.user, f["NoNewPrivs"])
		}
	}
}
