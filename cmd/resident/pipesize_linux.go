package main

import "golang.org/x/sys/unix"

// hostPipeBytes is the pipe buffer asked for the host channel when it is a
// pipe (as every host spawns the resident): a 256 KiB chunk's frame is
// 350 KB, which a default 64 KiB pipe passes in six wake-ups of each side.
// 1 MiB is the most an unprivileged process may ask for by default
// (/proc/sys/fs/pipe-max-size); a refusal leaves the pipe as it was.
const hostPipeBytes = 1 << 20

// growPipes enlarges the buffers of those of fds that are pipes. The
// buffer belongs to the pipe, so the host's end gains as well.
func growPipes(fds ...int) {
	for _, fd := range fds {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			continue
		}
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, hostPipeBytes)
	}
}
