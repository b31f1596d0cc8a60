package testhost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// EndLocalInits kills the inits (keepers) of the local sandboxes under a
// state directory a test is about to lose: under bubblewrap each sandbox
// is a process tree that outlives its resident, as a container outlives
// its docker client, and a test that never terminated its sandbox would
// leave it running with its directory gone. Only a process that still has
// that sandbox's root as its own is killed (init.json's pid may be reused).
func EndLocalInits(state string) {
	dirs, _ := filepath.Glob(filepath.Join(state, "local", "sandboxes", "*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "init.json"))
		if err != nil {
			continue
		}
		var rec struct {
			PID int `json:"pid"`
		}
		if json.Unmarshal(data, &rec) != nil || rec.PID <= 1 {
			continue
		}
		root, errR := os.Stat(filepath.Join(dir, "root"))
		its, errI := os.Stat("/proc/" + strconv.Itoa(rec.PID) + "/root")
		if errR == nil && errI == nil && os.SameFile(root, its) {
			_ = syscall.Kill(rec.PID, syscall.SIGKILL) // pid 1 of its namespace: the whole sandbox ends
		}
	}
}
