// Package keeperproto is the small wire shared by the keeper, the static
// helper a provider puts into every sandbox (../cmd/keeper), and the
// resident's side of it (package keeper, used by the Docker provider).
// Both sides import it so the two can never disagree on a byte.
package keeperproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Path is where the keeper lives inside a sandbox and inside the helper
// image: a read-only volume mounted at Dir.
const (
	Dir  = "/.resident"
	Path = Dir + "/keeper"
)

// StoreRoot is where a store helper container mounts the volume it browses.
const StoreRoot = "/v"

// Subcommands (argv[1]).
const (
	CmdAlive = "alive" // alive SECONDS: keep the sandbox up (0 = until stopped)
	CmdRun   = "run"   // run -token T [-cwd D] [-stdin] [-exclusive] [-deadline-ms N] -- argv...
	CmdKill  = "kill"  // kill -token T: kill the tree of the run with that token
	CmdOOM   = "oom"   // oom: print the cgroup's OOM-kill counter (-1 if unknown)
	CmdLs    = "ls"    // ls [-lease] [-sandbox] -limit N -- PATH: JSON listing of StoreRoot/PATH (-sandbox: of PATH itself, as the user opens it)
	CmdCat   = "cat"   // cat [-lease] [-sandbox] -- PATH: Header line, then the bytes of StoreRoot/PATH (-sandbox: of PATH itself)
	CmdPut   = "put"   // put [-mode OCTAL] [-framed] -- PATH: stdin's bytes to PATH (-framed: data frames then FrameEOF, atomic); a Header line
)

// Every process an exec starts carries its mark: a supplementary group id
// unique to the exec, derived from the run token, in [MarkBase,
// MarkBase+MarkSpan). The command runs without capabilities, so neither it
// nor any descendant can drop the mark (setgroups needs CAP_SETGID),
// whatever it does to its ancestry: the tree kill is "every process whose
// groups hold the mark", and "exclusive" kills every process holding any
// mark. No image gives these gids meaning; they stay below 2^31.
const (
	MarkBase uint32 = 0x60000000
	MarkSpan uint32 = 1 << 28
)

// KeeperUID is the uid (and gid) every keeper switches to before anything of
// the sandbox runs beside it: a process of the sandbox runs as root without
// CAP_KILL, and may signal only processes of its own uid, so it cannot kill
// a keeper; nor, the keeper being non-dumpable and holding capabilities it
// lacks, trace it or open its descriptors. Outside the mark range.
const KeeperUID = 0x5ffffff0

// Mark is the mark of the run with this token: the token's first 28 bits
// (it is random hex) above MarkBase. ok is false for a token that is not
// hex of at least 7 digits.
func Mark(token string) (mark uint32, ok bool) {
	if len(token) < 7 {
		return 0, false
	}
	var n uint32
	for _, c := range token[:7] {
		d, ok := hexDigit(c)
		if !ok {
			return 0, false
		}
		n = n<<4 | d
	}
	return MarkBase + n%MarkSpan, true
}

// IsMark reports whether gid is in the mark range.
func IsMark(gid uint32) bool { return gid >= MarkBase && gid-MarkBase < MarkSpan }

func hexDigit(c rune) (uint32, bool) {
	switch {
	case c >= '0' && c <= '9':
		return uint32(c - '0'), true
	case c >= 'a' && c <= 'f':
		return uint32(c-'a') + 10, true
	}
	return 0, false
}

// StatusPrefix starts the first line a "run" keeper writes on stdout, before
// the child exists: "\x00resident-keeper ok <oomcount>\n" when the child is
// about to start, or "\x00resident-keeper err <kind> <message>\n" when it
// cannot (bad cwd, no such executable). <kind> may be
// "kind/reason/field": the protocol's error reason (no_such_file,
// permission_denied, not_directory) and the param it is about (argv, cwd).
// The NUL keeps it from ever looking like output a program would print first.
const StatusPrefix = "\x00resident-keeper "

// MaxStatusLine bounds how much the provider reads looking for the status.
const MaxStatusLine = 4096

// KilledExitCode is the keeper's exit code after it killed the tree on
// request (128+SIGKILL, what a shell reports for the same outcome).
const KilledExitCode = 137

// Control frames, provider to keeper, on the exec's stdin: one type byte, a
// big-endian uint32 length, then the payload. The keeper's own stdin is
// never the child's; data frames are copied to the child's stdin.
const (
	FrameData byte = 'd' // payload: bytes for the child's stdin
	FrameEOF  byte = 'e' // close the child's stdin
	FrameKill byte = 'k' // kill the whole process tree, then exit KilledExitCode
)

// MaxFramePayload bounds one frame; writers split larger data.
const MaxFramePayload = 32 << 10

// WriteFrame writes one control frame.
func WriteFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > MaxFramePayload {
		return fmt.Errorf("keeperproto: frame payload %d > %d", len(payload), MaxFramePayload)
	}
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(append(hdr[:], payload...)); err != nil {
		return err
	}
	return nil
}

// ReadFrame reads one control frame.
func ReadFrame(r io.Reader) (typ byte, payload []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxFramePayload {
		return 0, nil, errors.New("keeperproto: frame too large")
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return hdr[0], payload, nil
}

// Error kinds the keeper reports; they are protocol kinds by name.
const (
	KindNotFound       = "not_found"
	KindInvalidRequest = "invalid_request"
	KindInternal       = "internal"
	KindTransient      = "transient"
)

// Header is the first line of "cat" output, and the whole output of "ls"
// (as JSON). Error is set instead when the operation failed.
type Header struct {
	Size      int64   `json:"size,omitempty"`
	Entries   []Entry `json:"entries,omitempty"`
	Truncated bool    `json:"truncated,omitempty"`
	Error     string  `json:"error,omitempty"`
	Kind      string  `json:"kind,omitempty"`
	// Reason is the protocol's error reason by name (no_such_file,
	// is_directory, not_directory, permission_denied, too_large, exists)
	// when the error has one.
	Reason string `json:"reason,omitempty"`
}

// Entry is one directory entry in an "ls" listing.
type Entry struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
}
