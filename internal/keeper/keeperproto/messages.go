package keeperproto

import "time"

// The JSON payloads of the channel's control frames (see frame.go). Data
// frames (ChanStdout, ChanStderr, ChanStdin) carry raw bytes; ChanCredit
// four bytes; the rest one of these.

// ChanVersion is the channel protocol's version, sent in Hello and
// Welcome; a keeper refuses a Hello of a version it does not speak.
const ChanVersion = 1

// Serve's flags (keeper serve -stdio | -listen-fd N [-lifetime SECONDS]).
const CmdServe = "serve"

// Hello takes the channel over. Nonce is random: the Welcome that answers
// echoes it, so on a broadcast stream each holder knows whose it is.
type Hello struct {
	Version int    `json:"version"`
	Nonce   string `json:"nonce"`
	// LeaseMS, unless 0, is how long the holder may stay silent: it sends
	// a frame (ChanPing when it has nothing else) well within it, and a
	// keeper that hears nothing for LeaseMS treats the holder as gone, as
	// if its transport had ended (non-detached execs are killed, frames of
	// its generation are refused from then on). An attach stream never
	// ends for the keeper when its holder dies: this is how it learns.
	LeaseMS int64 `json:"lease_ms,omitempty"`
	// SealKey, unless empty, is a fresh random key of SealKeySize bytes
	// (standard base64): a keeper that announces FeatureSeal writes every
	// frame of this holder's generation sealed with it, the Welcome first
	// (seal.go). Sent only on a direction no log records (a container's
	// stdin); a keeper without the feature ignores it and answers in
	// plaintext, which a holder that asked refuses.
	SealKey string `json:"seal_key,omitempty"`
}

// Welcome answers a Hello: from now on the holder sends Generation on
// every frame, and frames of any older generation are refused.
type Welcome struct {
	Version    int      `json:"version"`
	Nonce      string   `json:"nonce"`
	Generation uint64   `json:"generation"`
	Features   []string `json:"features"`
	// Window is the keeper's input credit per stream (stdin, uploads).
	Window int `json:"window"`
	// Protected says the keeper holds its own uid, is non-dumpable and
	// marks execs; false when it was not started as root (tests, an image
	// whose user is not root).
	Protected bool `json:"protected"`
	// Env is the keeper's own environment as it started (the container's:
	// the image's and the pod's or container's settings), which an engine
	// exec would have inherited: a holder that cannot read the image lays
	// an exec's variables over it. Empty when it would not fit in a frame
	// (over MaxWelcomeEnv bytes).
	Env []string `json:"env,omitempty"`
	// Cwd is the keeper's working directory as it started (the image's or
	// the container's), where an exec without a cwd starts: a holder
	// resolves relative file paths in it.
	Cwd string `json:"cwd,omitempty"`
}

// MaxWelcomeEnv bounds Welcome.Env, encoded, so the Welcome fits in one
// frame.
const MaxWelcomeEnv = 24 << 10

// Features a keeper announces.
const (
	FeatureExec     = "exec"
	FeatureDetach   = "detach"
	FeatureTTY      = "tty"
	FeatureUser     = "user"
	FeatureFiles    = "files"
	FeatureOOMCount = "oom_count"
	// FeatureAttachStdin: Attached says whether the exec has a stdin.
	FeatureAttachStdin = "attach_stdin"
	// FeatureFileStage: ReadFile takes StatOnly and WriteFile takes
	// Staged, so a holder can move a file's bytes on another transport
	// (the engine's archive endpoint) while the keeper checks and commits
	// them as the user.
	FeatureFileStage = "file_stage"
)

// Fenced tells a holder its frame was refused: another took over.
type Fenced struct {
	Generation uint64 `json:"generation"` // the current one
	Msg        string `json:"msg"`
}

// WindowSize is a terminal's size.
type WindowSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// Exec starts a command on a new stream.
type Exec struct {
	// ID names the exec (unique among the keeper's execs: one in use is
	// conflict); empty for one the keeper makes up.
	ID        string      `json:"id,omitempty"`
	Argv      []string    `json:"argv"`
	Env       []string    `json:"env"`
	Cwd       string      `json:"cwd,omitempty"`
	User      string      `json:"user,omitempty"`
	TTY       *WindowSize `json:"tty,omitempty"`
	Stdin     bool        `json:"stdin,omitempty"`
	Exclusive bool        `json:"exclusive,omitempty"`
	// DeadlineMS is the time left, not a wall-clock time: the sandbox's
	// clock need not agree with the resident's.
	DeadlineMS int64 `json:"deadline_ms,omitempty"`
	Detach     bool  `json:"detach,omitempty"`
	// Buffer is a detached exec's ring size in bytes; 0 for DefaultRing.
	Buffer int64 `json:"buffer,omitempty"`
	// Window is the client's output credit for this stream.
	Window int `json:"window"`
}

// DefaultRing is a detached exec's output ring when Exec.Buffer is 0.
const DefaultRing = 1 << 20

// MaxRing bounds what a client may ask for.
const MaxRing = 64 << 20

// Started says the exec runs.
type Started struct {
	ExecID string `json:"exec_id"`
	Pid    int    `json:"pid"`
	Buffer int64  `json:"buffer,omitempty"` // a detached exec's ring size
}

// Reasons, the closed set of issue 14 (file and start errors).
const (
	ReasonNoSuchFile       = "no_such_file"
	ReasonIsDirectory      = "is_directory"
	ReasonNotDirectory     = "not_directory"
	ReasonPermissionDenied = "permission_denied"
	ReasonTooLarge         = "too_large"
	ReasonExists           = "exists"
)

// Failure is a stream's request that failed: Kind is a protocol kind
// (Kind* above), Reason one of Reason* or empty.
type Failure struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason,omitempty"`
	// Field is what the reason is about: "argv", "cwd", "user", "id" or
	// "path".
	Field string `json:"field,omitempty"`
	Msg   string `json:"msg"`
}

// KillExec kills an exec's tree by its id (a detached exec nobody follows).
type KillExec struct {
	ExecID string `json:"exec_id"`
}

// Exit is how an exec ended.
type Exit struct {
	// Code is what a shell reports: the exit code, or 128+n for signal n.
	Code int `json:"code"`
	// Signal names the signal that ended the command, if one did.
	Signal    string `json:"signal,omitempty"`
	OOMKilled bool   `json:"oom_killed,omitempty"`
	// Killed: the keeper killed the tree (Kill, deadline, an exclusive
	// exec, the channel that started it breaking).
	Killed   bool `json:"killed,omitempty"`
	TimedOut bool `json:"timed_out,omitempty"`
}

// Attach asks for a detached exec's output from Offset (counted over
// stdout and stderr together since the exec started).
type Attach struct {
	ExecID string `json:"exec_id"`
	Offset int64  `json:"offset"`
	Window int    `json:"window"`
}

// Attached says where the replay starts: Offset is the requested one, or
// the oldest byte still kept if that is later.
type Attached struct {
	ExecID  string `json:"exec_id"`
	Offset  int64  `json:"offset"`
	End     int64  `json:"end"` // bytes produced so far
	Buffer  int64  `json:"buffer"`
	Dropped int64  `json:"dropped"`
	Running bool   `json:"running"`
	Exit    *Exit  `json:"exit,omitempty"`
	// Stdin says the exec has a stdin (or a terminal) to write to; sent
	// by keepers that announce FeatureAttachStdin.
	Stdin bool `json:"stdin,omitempty"`
}

// ExecInfo describes one detached exec (ListExecs' Result).
type ExecInfo struct {
	ExecID    string   `json:"exec_id"`
	Argv      []string `json:"argv"`
	StartedNS int64    `json:"started_ns"`
	Running   bool     `json:"running"`
	Exit      *Exit    `json:"exit,omitempty"`
	End       int64    `json:"end"`
	Buffered  int64    `json:"buffered"`
	Buffer    int64    `json:"buffer"`
	Dropped   int64    `json:"dropped"`
}

// WriteFile writes the stream's input to Path, atomically (a temporary
// file beside it, renamed into place), as User.
type WriteFile struct {
	Path string  `json:"path"`
	Mode *uint32 `json:"mode,omitempty"`
	User string  `json:"user,omitempty"`
	// Staged (FeatureFileStage): the bytes do not come on the stream. The
	// keeper checks the write as User, makes a staging directory beside
	// the target (StageName) and answers a first Result whose File names
	// it (Path), with the uid and gid the staged file must have and its
	// Mode. The holder puts the file there by other means, named as the
	// directory is (a random name, hidden, that only the holder learns),
	// then sends its size as 8 big-endian bytes of input and the end of
	// input: the keeper checks the staged file (regular, that size, the
	// user's) and renames it over the target as User, then answers the
	// final Result. A release, a cut stream or a failed check removes the
	// staging directory and all in it.
	Staged bool `json:"staged,omitempty"`
}

// FileInfo is what the keeper found of a file as the user (a ReadFile
// with StatOnly, a staged WriteFile's staging directory).
type FileInfo struct {
	// Path is the file's own path with no symlink on it (what the opened
	// descriptor names in /proc/self/fd); empty if it could not be told.
	Path    string `json:"path"`
	Mode    uint32 `json:"mode"` // permission bits
	UID     int    `json:"uid"`
	GID     int    `json:"gid"`
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	// OnRoot: on the same filesystem as the sandbox's root (not a volume,
	// a tmpfs or a bind mount), where the engine's archive endpoint sees
	// exactly what the sandbox sees.
	OnRoot bool `json:"on_root"`
}

// ReadFile streams Path's bytes as User (Result with the size, ChanStdout
// frames, ChanEnd).
type ReadFile struct {
	Path   string `json:"path"`
	User   string `json:"user,omitempty"`
	Window int    `json:"window"`
	// StatOnly (FeatureFileStage): open and check the file as User and
	// answer Result with its Size and File, then End, sending no bytes.
	StatOnly bool `json:"stat_only,omitempty"`
}

// ListDir lists at most Limit entries of Path as User.
type ListDir struct {
	Path  string `json:"path"`
	User  string `json:"user,omitempty"`
	Limit int    `json:"limit"`
}

// Result is a stream's request that succeeded; which fields are set
// depends on the request.
type Result struct {
	Size      int64      `json:"size,omitempty"`
	Entries   []Entry    `json:"entries,omitempty"`
	Truncated bool       `json:"truncated,omitempty"`
	Execs     []ExecInfo `json:"execs,omitempty"`
	// File: a ReadFile's (with FeatureFileStage, StatOnly or not), a
	// staged WriteFile's first Result.
	File *FileInfo `json:"file,omitempty"`
}

// FeatureNet: the keeper serves connection streams (ChanDial): a
// forwarded port or an egress proxy's held connection, carried by the
// keeper itself, with no exec and no process per connection.
const FeatureNet = "net"

// FeatureShutdown: the keeper takes ChanShutdown (an empty JSON object):
// as the sandbox's init and protected, it kills every other process of
// the sandbox, reaps them, answers Result when none is left and exits,
// which stops the sandbox; anywhere else, or with a process it cannot
// get rid of within ShutdownWait, it answers Failure and serves on. A
// holder can so answer "terminated" on the keeper's word, without
// waiting for the engine to record the container's exit.
const FeatureShutdown = "shutdown"

// ShutdownWait bounds how long a keeper waits for the sandbox's processes
// to be gone after it killed them.
const ShutdownWait = 5 * time.Second

// Dial opens a connection stream to 127.0.0.1:Port inside the sandbox, or,
// with ProxyID, to the egress proxy's held connection of that id (the
// keeper joins it on ProxySocket, as CmdAttach does). The keeper answers
// Result once connected, or Failure (Kind, Reason one of Net*).
//
// Then each way carries bytes within the receiver's credit: ChanStdout
// from the keeper within Window (given back with ChanCredit as read),
// ChanStdin from the client within Welcome.Window (the keeper gives it
// back once written to the socket), so a reader that stops stalls its own
// connection only. ChanStdinEOF half-closes the sandbox side's input
// after the bytes before it; an empty ChanEnd says the sandbox side will
// send no more (its half-close), and the stream goes on the other way
// until both have ended. A ChanEnd carrying a NetReset is the keeper
// ending the connection on an error (the socket's failure, the stream
// given up): nothing more goes either way. ChanRelease from the client
// resets the connection (the keeper closes the socket at once).
type Dial struct {
	Port    int    `json:"port,omitempty"`
	ProxyID string `json:"proxy_id,omitempty"`
	Window  int    `json:"window"`
}

// NetReset is a ChanEnd's payload when the keeper reset a connection
// stream: Reason is one of Net*, Msg what the socket said.
type NetReset struct {
	Reason string `json:"reason"`
	Msg    string `json:"msg"`
}

// The reasons of a connection stream's Failure or NetReset.
const (
	NetRefused     = "refused"     // nothing listens on the port (ECONNREFUSED)
	NetUnreachable = "unreachable" // the address cannot be reached, or the dial timed out
	NetResetByPeer = "reset"       // the peer reset the connection, or a write to it failed
	NetError       = "error"       // any other failure of the socket
)
