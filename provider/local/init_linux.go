//go:build linux

package local

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// Files of a sandbox's init, in the sandbox's private directory (0700,
// beside root/: nothing of the sandbox sees them).
const (
	initFile   = "init.json"   // the running init: host pid, pid namespace, start time
	initLog    = "init.log"    // bwrap's and the keeper's own stderr
	socketFile = "keeper.sock" // the keeper's listening socket
)

// initRecord is init.json: enough for a later resident to find the init
// again and be sure it is that very process (a pid can be reused).
type initRecord struct {
	PID   int    `json:"pid"`
	PidNS uint64 `json:"pid_ns"`
	Start uint64 `json:"start"` // clock ticks after boot
}

// initStatusFD and listenFD are the descriptors the init's bwrap gets:
// cmd.ExtraFiles[1] and [0]. The keeper inherits the listening socket.
const (
	listenFD     = 3
	initStatusFD = 4
)

// keeperCaps are all an isolated sandbox is given, and only its init (the
// keeper) keeps them: it drops every capability for the commands it runs,
// as on Docker.
var keeperCaps = []string{"CAP_KILL", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"}

// initArgs is the sandbox's bwrap: its namespaces (pid, mount, IPC, UTS,
// and network unless shared) held by the keeper as pid 1, which the
// kernel protects from every signal of the sandbox's own processes. It
// serves the channel on the listening socket it inherits.
func initArgs(bwrap string, v view, etc []string, keeperDir string, lifetime int64) []string {
	args := append([]string{bwrap}, v.mountArgs(etc)...)
	args = append(args, keeperBinds(keeperDir)...)
	args = append(args, "--unshare-pid", "--as-pid-1", "--json-status-fd", strconv.Itoa(initStatusFD), "--cap-drop", "ALL")
	for _, c := range keeperCaps {
		args = append(args, "--cap-add", c)
	}
	return append(args, "--", keeperproto.Path, keeperproto.CmdServe, "-listen-fd", strconv.Itoa(listenFD), "-lifetime", strconv.FormatInt(lifetime, 10))
}

// lifetimeLeft is the keeper's -lifetime: whole seconds until the
// sandbox's lifetime ends (rounded up), 0 for none. ok is false once it
// ended.
func lifetimeLeft(m *meta, now time.Time) (secs int64, ok bool) {
	if m.ExpiresAt == nil {
		return 0, true
	}
	left := m.ExpiresAt.Sub(now)
	if left <= 0 {
		return 0, false
	}
	return int64(math.Ceil(left.Seconds())), true
}

// startInit starts the sandbox's init: one bwrap, detached from the
// resident (a session of its own, no parent-death signal: the sandbox
// outlives the resident, and its lifetime is the keeper's to hold). The
// resident binds the listening socket in the sandbox's private directory
// and hands it over as fd 3; its own copy is closed once bwrap has it, so
// the keeper holds the only one, and the path is where a later resident
// connects.
func (p *Provider) startInit(si *sandboxInit, id string, m *meta) error {
	bwrap := p.isolation()
	lifetime, ok := lifetimeLeft(m, p.now())
	if !ok {
		return expiredErr(id, m)
	}
	keeperDir, err := p.keeperDir()
	if err != nil {
		return err
	}
	dir := p.sandboxDir(id)
	v, err := p.viewFor(id, m, "/")
	if err != nil {
		return err
	}
	shared := hostEtcEntries(v.network)
	if err := prepareEtc(filepath.Join(dir, etcDir), shared); err != nil {
		return fmt.Errorf("sandbox /etc: %w", err)
	}
	cgroups, err := sandboxCgroups(id, m.Spec)
	if err != nil {
		return &protocol.Error{Kind: protocol.KindTransient, Msg: "sandbox init: the sandbox's limits", Err: err}
	}
	listener, err := listenIn(dir, socketFile)
	if err != nil {
		return fmt.Errorf("sandbox init: socket: %w", err)
	}
	defer listener.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer statusR.Close()
	logFile, err := os.OpenFile(filepath.Join(dir, initLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		_ = statusW.Close()
		return err
	}
	defer logFile.Close()
	logStart, _ := logFile.Seek(0, 2)

	args := initArgs(bwrap, v, etcMountArgs(filepath.Join(dir, etcDir), shared), keeperDir, lifetime)
	cmd := &exec.Cmd{
		Path:        bwrap,
		Args:        args,
		Env:         []string{"PATH=" + defaultPath},
		Dir:         "/",
		Stdout:      logFile,
		Stderr:      logFile,
		ExtraFiles:  []*os.File{listener, statusW},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = startInCgroups(cgroups, cmd)
	_ = statusW.Close()
	if err != nil {
		return fmt.Errorf("sandbox init: %w", err)
	}
	_ = listener.Close() // the keeper's now, and only the keeper's

	_ = statusR.SetReadDeadline(time.Now().Add(setupTimeout))
	var info namespaceInfo
	if err := json.NewDecoder(statusR).Decode(&info); err != nil || info.InitPID <= 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return &setupError{msg: readLogFrom(filepath.Join(dir, initLog), logStart)}
	}
	// bwrap has forked the init (it reported it), so its outer process
	// may leave the sandbox's cgroups: it is the resident's, and costs no
	// pid of the sandbox's limit.
	movePidBack(cmd.Process.Pid)
	ns, err := openNamespace(info)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return &setupError{msg: "the init ended at once: " + readLogFrom(filepath.Join(dir, initLog), logStart)}
	}
	if !inCgroups(info.InitPID, cgroups) {
		// Never a sandbox with limits it does not have.
		ns.kill()
		ns.awaitEnd(evictTimeout)
		ns.close()
		_ = cmd.Wait()
		return fmt.Errorf("sandbox init: it is not in the sandbox's cgroups %v", cgroups)
	}
	rec := initRecord{PID: info.InitPID, PidNS: info.PidNS, Start: startTime(info.InitPID)}
	data, _ := json.Marshal(rec)
	if err := writeFileAtomic(dir, initFile, data, 0o600); err != nil {
		ns.kill()
		ns.close()
		_ = cmd.Wait()
		return fmt.Errorf("sandbox init: %w", err)
	}
	si.ns, si.rec, si.bwrap, si.cgroups, si.logStart = ns, rec, cmd, cgroups, logStart
	p.log.Info("sandbox init started", zap.String("sandbox_id", id), zap.Int("pid", rec.PID))
	return nil
}

// adoptInit takes hold of an init an earlier resident started, if
// init.json names one that still runs.
func (p *Provider) adoptInit(si *sandboxInit, id string, m *meta) bool {
	ns, rec, ok := findInit(p.sandboxDir(id))
	if !ok {
		return false
	}
	cgroups, _ := sandboxCgroups(id, m.Spec)
	si.ns, si.rec, si.bwrap, si.cgroups = ns, rec, nil, cgroups
	return true
}

// strayInit is the running init of the sandbox whose directory is dir that
// this instance does not hold (an earlier resident started it), or nil.
func (p *Provider) strayInit(dir string) *sandboxInit {
	ns, rec, ok := findInit(dir)
	if !ok {
		return nil
	}
	return &sandboxInit{ns: ns, rec: rec}
}

// findInit opens the init dir/init.json names, if it is still that very
// process: pid 1 of that pid namespace, started at that time.
func findInit(dir string) (*pidNamespace, initRecord, bool) {
	data, err := os.ReadFile(filepath.Join(dir, initFile))
	if err != nil {
		return nil, initRecord{}, false
	}
	var rec initRecord
	if json.Unmarshal(data, &rec) != nil || rec.PID <= 0 {
		return nil, initRecord{}, false
	}
	ns, err := openNamespace(namespaceInfo{InitPID: rec.PID, PidNS: rec.PidNS})
	if err != nil {
		return nil, initRecord{}, false
	}
	if pi, ok := readProc(rec.PID); !ok || pi.start != rec.Start || pi.zombie {
		ns.close()
		return nil, initRecord{}, false
	}
	return ns, rec, true
}

// readLogFrom is what bwrap or the keeper said since offset: why a start
// failed.
func readLogFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := f.ReadAt(buf, offset)
	msg := strings.TrimSpace(string(buf[:n]))
	if msg == "" {
		return "(nothing logged)"
	}
	return msg
}
