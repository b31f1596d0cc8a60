package docker

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/resident-dev/resident/internal/keeper/channel"
)

// The keeper flags an exec OOM-killed when its main process died by
// SIGKILL while the sandbox's OOM count grew; a shell whose child the
// limit killed exits 137 instead. For that case the provider reads the
// count itself, over the channel (the cgroup's own file, readable in the
// sandbox): the holder remembers the last count seen, read when the
// channel opened, and an exec ending 137 or by SIGKILL with a higher count
// is OOM-killed. An OOM kill of a concurrent exec in that window counts
// too, as on the exec path.

// oomFiles are where a sandbox sees its cgroup's OOM kill count (v2, v1).
var oomFiles = []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"}

// oomCount reads the sandbox's OOM kill count over conn; -1 when it
// cannot be read.
func (p *Provider) oomCount(ctx context.Context, conn *channel.Conn) int64 {
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	for _, name := range oomFiles {
		rc, err := conn.ReadFile(ctx, name, "")
		if err != nil {
			continue
		}
		n, ok := oomKillCount(rc)
		_ = rc.Close()
		if ok {
			return n
		}
	}
	return -1
}

// oomKillCount finds the "oom_kill N" line of a cgroup's events file.
func oomKillCount(r io.Reader) (int64, bool) {
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == "oom_kill" {
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// oomGrew reports whether the sandbox's OOM count grew since the holder
// last looked, and remembers the new count.
func (p *Provider) oomGrew(ctx context.Context, ch *chanHolder, conn *channel.Conn) bool {
	if ch.oomSeen.Load() < 0 {
		return false // no count to compare with
	}
	// The cgroup can still be at its limit as the victim exits, and the
	// keeper's open of its file is charged to it: a failed read is tried
	// again for a while (the keeper does the same for its own flag).
	n := p.oomCount(ctx, conn)
	for try := 0; n < 0 && try < 10 && ctx.Err() == nil; try++ {
		time.Sleep(20 * time.Millisecond)
		n = p.oomCount(ctx, conn)
	}
	if n < 0 {
		return false
	}
	prev := ch.oomSeen.Swap(n)
	return prev >= 0 && n > prev
}
