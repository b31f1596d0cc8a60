package keeperproto

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
}

// Features a keeper announces.
const (
	FeatureExec     = "exec"
	FeatureDetach   = "detach"
	FeatureTTY      = "tty"
	FeatureUser     = "user"
	FeatureFiles    = "files"
	FeatureOOMCount = "oom_count"
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
}

// ReadFile streams Path's bytes as User (Result with the size, ChanStdout
// frames, ChanEnd).
type ReadFile struct {
	Path   string `json:"path"`
	User   string `json:"user,omitempty"`
	Window int    `json:"window"`
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
}
