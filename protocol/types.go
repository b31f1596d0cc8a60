package protocol

import "time"

// InitializeParams opens a session. Credentials are secrets: they are
// registered with the scrubber before anything else sees them.
type InitializeParams struct {
	ProtocolVersion     int               `json:"protocol_version"`
	InstallID           string            `json:"install_id"`
	Credentials         map[string]string `json:"credentials,omitempty"`
	CredentialsExpireAt *time.Time        `json:"credentials_expire_at,omitempty"`
	TagPrefix           string            `json:"tag_prefix,omitempty"`
}

// InitializeResult describes the resident and its provider: every optional
// ability (Capabilities), every bound (Limits) and the closed set of error
// kinds, so a host never learns them from a failure.
type InitializeResult struct {
	ResidentVersion string       `json:"resident_version"`
	ProtocolVersion int          `json:"protocol_version"`
	Provider        ProviderInfo `json:"provider"`
	Capabilities    Capabilities `json:"capabilities"`
	Limits          Limits       `json:"limits"`
	ErrorKinds      []Kind       `json:"error_kinds"`
	// OwnerTag is the tag key that marks this install's sandboxes.
	OwnerTag string `json:"owner_tag"`
}

// ProviderInfo names the provider the resident loaded.
type ProviderInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Capabilities says which optional operations and features this provider has,
// so a host never has to learn it from an error.
type Capabilities struct {
	Store            bool `json:"store"`
	WriteFile        bool `json:"write_file"`
	Stdin            bool `json:"stdin"`
	Isolation        bool `json:"isolation"`
	NetworkControl   bool `json:"network_control"`
	ResourceLimits   bool `json:"resource_limits"`
	ReadOnlyVolumes  bool `json:"read_only_volumes"`
	ImagePull        bool `json:"image_pull"`
	CredentialExpiry bool `json:"credential_expiry"`
	// Detach: sandbox/exec takes detach, and exec/attach and
	// sandbox/list_execs work.
	Detach bool `json:"detach"`
	// Pool: sandbox/create takes pool (warm pools, §4.2).
	Pool bool `json:"pool"`
	// Snapshot: sandbox/snapshot, snapshot/list and snapshot/delete, and
	// spec.image "snapshot:NAME" (§4.16).
	Snapshot bool `json:"snapshot"`
	// ImageBuild: image/build, and spec.image "build:TAG" (§4.33).
	ImageBuild bool `json:"image_build"`
	// SandboxFiles: sandbox/read_file and sandbox/list_dir.
	SandboxFiles bool `json:"sandbox_files"`
	// Upload: sandbox/write_file with stream_id, fed by upload/data.
	Upload bool `json:"upload"`
	// ExecUser: sandbox/exec's user and spec.user.
	ExecUser bool `json:"exec_user"`
	// TTY: sandbox/exec's tty and exec/resize.
	TTY bool `json:"tty"`
	// VolumeAdmin: store/create_volume and store/delete_volume.
	VolumeAdmin bool `json:"volume_admin"`
	// Watch: sandbox/watch (the resident's own; always true).
	Watch bool `json:"watch"`
	// PortForward: sandbox/forward_port and port/close work.
	PortForward bool `json:"port_forward"`
	// Egress: spec.egress works.
	Egress bool `json:"egress"`
}

// Limits are every bound the resident enforces; there are no hidden ones.
type Limits struct {
	MaxFrameBytes         int   `json:"max_frame_bytes"`
	OutputCapBytes        int64 `json:"output_cap_bytes"`
	DefaultExecTimeoutS   int64 `json:"default_exec_timeout_s"`
	MaxExecTimeoutS       int64 `json:"max_exec_timeout_s"`
	MaxFileBytes          int64 `json:"max_file_bytes"`
	MaxConcurrentExecs    int   `json:"max_concurrent_execs"`
	MaxListDirEntries     int   `json:"max_list_dir_entries"`
	DefaultListDirEntries int   `json:"default_list_dir_entries"`
	CredentialsExpiryExit int   `json:"credentials_expiry_exit_s"`
	// MaxPathBytes bounds every path a host sends (store paths, write_file,
	// exec cwd, spec.workdir, volume mount paths). Fixed: Linux's PATH_MAX.
	MaxPathBytes int `json:"max_path_bytes"`
	// MaxHeldRequestBytes bounds every byte the resident holds for the
	// host's requests, read and not yet answered, all of them together.
	MaxHeldRequestBytes int64 `json:"max_held_request_bytes"`
	// CallTimeoutS is the provider's bound on one call, in seconds (0:
	// none); the resident announces it, the provider enforces it.
	CallTimeoutS int64 `json:"call_timeout_s"`
	// DetachedBufferBytes is how much output the provider keeps per
	// detached exec (0 without the detach capability); older output is
	// dropped and counted.
	DetachedBufferBytes int64 `json:"detached_buffer_bytes"`
}

// Spec describes a sandbox. Zero values mean the provider's documented default.
// A key it does not have is refused with invalid_request naming the key,
// here and in its volumes, unlike elsewhere in params: an ignored spec key
// would shape the sandbox in a way nobody enforces.
type Spec struct {
	Image     string            `json:"image,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Workdir   string            `json:"workdir,omitempty"`
	CPUs      float64           `json:"cpus,omitempty"`
	MemoryMB  int64             `json:"memory_mb,omitempty"`
	Network   string            `json:"network,omitempty"`
	Volumes   []VolumeMount     `json:"volumes,omitempty"`
	LifetimeS int64             `json:"lifetime_s,omitempty"`
	// ReadOnlyRoot makes the root filesystem read-only, leaving the work
	// directory and /tmp writable (providers that isolate only).
	ReadOnlyRoot bool `json:"read_only_root,omitempty"`
	// PidsLimit overrides the provider's default process cap.
	PidsLimit int64 `json:"pids_limit,omitempty"`
	// RequireIsolation refuses the create (invalid_request) unless the
	// provider isolates sandboxes from the host (capabilities.isolation).
	RequireIsolation bool `json:"require_isolation,omitempty"`
	// User is who the sandbox's execs and file operations run as by
	// default: a name in its /etc/passwd, a uid, or uid:gid
	// (capabilities.exec_user). Empty: the image's user.
	User string `json:"user,omitempty"`
	// Egress lets the sandbox reach the hosts its rules allow, through
	// the resident (capabilities.egress); network must then be "none" or
	// unset.
	Egress *Egress `json:"egress,omitempty"`
}

// VolumeMount mounts a store volume into a sandbox at Path (relative paths
// are taken in the work directory). Volumes are owner-scoped: another
// install's looks missing.
type VolumeMount struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// CreateParams are sandbox/create's: the spec, and host tags (owner-shaped
// keys and the resident's namespace are refused).
type CreateParams struct {
	Spec Spec              `json:"spec"`
	Tags map[string]string `json:"tags,omitempty"`
	// Pool keeps sandboxes of this exact spec and tags ready, so that the
	// next create like this one answers at once (capabilities.pool).
	Pool *PoolParams `json:"pool,omitempty"`
}

// CreateResult holds the new sandbox's opaque id.
type CreateResult struct {
	SandboxID string `json:"sandbox_id"`
}

// ExecParams start one process in a sandbox: argv, never a shell string.
// ExecID is the host's name for it, in use until it answers.
type ExecParams struct {
	SandboxID string            `json:"sandbox_id"`
	Argv      []string          `json:"argv"`
	Env       map[string]string `json:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty"`
	TimeoutS  float64           `json:"timeout_s,omitempty"`
	Stdin     bool              `json:"stdin,omitempty"`
	Exclusive bool              `json:"exclusive,omitempty"`
	// Detach keeps the exec running when the host, its session or the
	// resident goes: its output is kept (a bounded ring, announced as
	// limits.detached_buffer_bytes) with its exit status, for exec/attach
	// from any later session of the same install. ExecID then names it in
	// its sandbox until it is attached after it ended, so it must be unique
	// among the sandbox's detached execs. A detached exec has no default
	// timeout; TimeoutS, when set, is enforced inside the sandbox.
	Detach bool   `json:"detach,omitempty"`
	ExecID string `json:"exec_id"`
	// User runs the command as a name, a uid or uid:gid instead of the
	// sandbox's user (capabilities.exec_user).
	User string `json:"user,omitempty"`
	// TTY runs the command on a pseudo-terminal of this size
	// (capabilities.tty): its output comes as stdout, stdin is open.
	TTY *WindowSize `json:"tty,omitempty"`
}

// WindowSize is a terminal's size in characters.
type WindowSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// ExecResizeParams resize the terminal of an exec started with tty.
type ExecResizeParams struct {
	ExecID string `json:"exec_id"`
	Rows   uint16 `json:"rows"`
	Cols   uint16 `json:"cols"`
}

// ExecResult is how an exec ended. An exec's own timeout is a result with
// TimedOut, not an error; byte counts are before the cap and scrubbing.
type ExecResult struct {
	ExitCode      int    `json:"exit_code"`
	TimedOut      bool   `json:"timed_out"`
	Killed        bool   `json:"killed"`
	Signal        string `json:"signal,omitempty"`
	OOMKilled     bool   `json:"oom_killed"`
	StdoutBytes   int64  `json:"stdout_bytes"`
	StderrBytes   int64  `json:"stderr_bytes"`
	StdoutDropped int64  `json:"stdout_dropped"`
	StderrDropped int64  `json:"stderr_dropped"`
	DurationMS    int64  `json:"duration_ms"`
	// Detached execs (and exec/attach) only. NextOffset is where an attach
	// would continue: the end of the exec's output. OutputLost counts the
	// bytes the ring no longer held when this attach asked for them (the
	// ring is bounded; a loss is counted, never silent).
	NextOffset *int64 `json:"next_offset,omitempty"`
	OutputLost int64  `json:"output_lost,omitempty"`
}

// ExecStdinParams write to the stdin of an exec started with stdin; EOF
// closes it after Data.
type ExecStdinParams struct {
	ExecID string `json:"exec_id"`
	Data   []byte `json:"data,omitempty"`
	EOF    bool   `json:"eof,omitempty"`
}

// ExecKillParams name the exec whose whole process tree is killed. A
// detached exec that this session is not attached to is named by its
// sandbox too (SandboxID); killing one that has ended is a no-op.
type ExecKillParams struct {
	ExecID    string `json:"exec_id"`
	SandboxID string `json:"sandbox_id,omitempty"`
}

// ExecOutput is one chunk of an exec's stdout or stderr, scrubbed; every
// chunk of an exec reaches the host before its response.
type ExecOutput struct {
	ExecID string `json:"exec_id"`
	Stream string `json:"stream"`
	Data   []byte `json:"data"`
	// Offset, for a detached exec, is where an exec/attach resumes right
	// after this chunk, with nothing shown twice and nothing skipped: the
	// raw position in the exec's output (both streams) up to which
	// everything has reached the host. Scrubbing holds a few bytes back
	// when they may begin a secret, so it can trail the bytes of Data.
	Offset *int64 `json:"offset,omitempty"`
}

// ExecStartResult answers exec/start: the detached exec runs, named
// ExecID in its sandbox; follow it with exec/attach.
type ExecStartResult struct {
	ExecID    string `json:"exec_id"`
	StartedAt string `json:"started_at"`
}

// ExecAttachParams attach this session to a detached exec: its kept output
// from Offset (0: everything the ring still holds) as exec/output
// notifications under ExecID, then its live output, and the answer (an
// ExecResult) once it has ended. SandboxID may be omitted: the resident
// then looks for the exec in every sandbox the install owns. Cancelling the
// request detaches again; exec/kill kills the exec; exec/stdin feeds it.
type ExecAttachParams struct {
	SandboxID string `json:"sandbox_id,omitempty"`
	ExecID    string `json:"exec_id"`
	Offset    int64  `json:"offset,omitempty"`
}

// ListExecsResult lists the detached execs of a sandbox, running or ended
// and not yet forgotten.
type ListExecsResult struct {
	Execs []ExecInfo `json:"execs"`
}

// ExecInfo is one detached exec. ExitCode is set once it ended.
type ExecInfo struct {
	ExecID    string   `json:"exec_id"`
	Argv      []string `json:"argv"`
	StartedAt string   `json:"started_at"`
	Running   bool     `json:"running"`
	ExitCode  *int     `json:"exit_code,omitempty"`
	Signal    string   `json:"signal,omitempty"`
	// NextOffset is the end of its output so far; BufferedBytes how much
	// of it the ring holds; DroppedBytes what the ring no longer holds.
	NextOffset    int64 `json:"next_offset"`
	BufferedBytes int64 `json:"buffered_bytes"`
	DroppedBytes  int64 `json:"dropped_bytes"`
}

// WriteFileParams put Data at Path in a running sandbox, as its own user;
// Mode nil keeps an existing file's permission bits (0644 for a new file).
// With StreamID instead of Data the file's bytes come in upload/data
// requests for that stream, of any size (capabilities.upload).
type WriteFileParams struct {
	SandboxID string  `json:"sandbox_id"`
	Path      string  `json:"path"`
	Data      []byte  `json:"data,omitempty"`
	Mode      *uint32 `json:"mode,omitempty"`
	StreamID  string  `json:"stream_id,omitempty"`
	// Size, with StreamID, is the file's size when the host knows it: the
	// upload must then be exactly that long, and a provider may carry it
	// on a faster path (Docker: the engine's archive endpoint).
	Size *int64 `json:"size,omitempty"`
}

// UploadDataParams carry the next bytes of a streamed sandbox/write_file;
// the request is answered once the provider has taken them (backpressure).
// EOF ends the file after Data.
type UploadDataParams struct {
	StreamID string `json:"stream_id"`
	Data     []byte `json:"data,omitempty"`
	EOF      bool   `json:"eof,omitempty"`
}

// SandboxReadFileParams stream one regular file of a running sandbox as
// store/data notifications tagged StreamID; a relative Path is taken in the
// sandbox's work directory. The result is a ReadFileResult.
type SandboxReadFileParams struct {
	SandboxID string `json:"sandbox_id"`
	Path      string `json:"path"`
	StreamID  string `json:"stream_id"`
}

// SandboxListDirParams name a directory of a running sandbox; Limit 0 means
// the default. The result is a ListDirResult.
type SandboxListDirParams struct {
	SandboxID string `json:"sandbox_id"`
	Path      string `json:"path"`
	Limit     int    `json:"limit,omitempty"`
}

// VolumeNameParams name one store volume.
type VolumeNameParams struct {
	Name string `json:"name"`
}

// WatchEvent is one change seen by sandbox/watch: a sandbox's state, or an
// exec's start or end. ExitCode is set for exec_ended.
type WatchEvent struct {
	Event     string `json:"event"`
	SandboxID string `json:"sandbox_id"`
	// State is the sandbox's state after a sandbox event.
	State    string `json:"state,omitempty"`
	ExecID   string `json:"exec_id,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
}

// Watch events.
const (
	WatchCreated    = "created"
	WatchState      = "state"
	WatchTerminated = "terminated"
	WatchExecStart  = "exec_started"
	WatchExecEnd    = "exec_ended"
)

// WriteFileResult counts the bytes written.
type WriteFileResult struct {
	Bytes int64 `json:"bytes"`
}

// Sandbox is one owned sandbox as list_owned reports it; CreatedAt is UTC in
// whole seconds on every provider.
type Sandbox struct {
	SandboxID string            `json:"sandbox_id"`
	Tags      map[string]string `json:"tags"`
	CreatedAt time.Time         `json:"created_at"`
	State     string            `json:"state"`
	Image     string            `json:"image,omitempty"`
}

// Sandbox states.
const (
	StateRunning = "running"
	StateStopped = "stopped"
	StateExpired = "expired"
	StateUnknown = "unknown"
)

// ListOwnedResult lists exactly the sandboxes this install owns.
type ListOwnedResult struct {
	Sandboxes []Sandbox `json:"sandboxes"`
}

// SandboxIDParams name one sandbox.
type SandboxIDParams struct {
	SandboxID string `json:"sandbox_id"`
}

// ReadOwnerResult is the sandbox's owner under this session's owner tag,
// null when it has none (or an ambiguous one).
type ReadOwnerResult struct {
	Owner *string `json:"owner"`
}

// TerminateResult says whether the sandbox existed; terminate is idempotent.
type TerminateResult struct {
	Existed bool `json:"existed"`
}

// Volume is one store volume this install may see.
type Volume struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// ListVolumesResult lists this install's volumes and the operator's grants.
type ListVolumesResult struct {
	Volumes []Volume `json:"volumes"`
}

// ListDirParams name a directory in a volume; Limit 0 means the default.
type ListDirParams struct {
	Root  string `json:"root"`
	Path  string `json:"path"`
	Limit int    `json:"limit,omitempty"`
}

// Entry types in list_dir.
const (
	EntryFile    = "file"
	EntryDir     = "dir"
	EntrySymlink = "symlink"
	EntryOther   = "other"
)

// DirEntry is one directory entry; a symlink is reported, never followed.
type DirEntry struct {
	Name  string    `json:"name"`
	Type  string    `json:"type"`
	Size  int64     `json:"size"`
	Mtime time.Time `json:"mtime"`
}

// ListDirResult holds at most the limit of entries; Truncated says more exist.
type ListDirResult struct {
	Entries   []DirEntry `json:"entries"`
	Truncated bool       `json:"truncated"`
}

// ReadFileParams stream one regular file of a volume as store/data
// notifications tagged StreamID.
type ReadFileParams struct {
	Root     string `json:"root"`
	Path     string `json:"path"`
	StreamID string `json:"stream_id"`
}

// ReadFileResult checks a finished read: the bytes the host received (after
// scrubbing, Redacted says whether it changed them) and their SHA-256.
type ReadFileResult struct {
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Redacted bool   `json:"redacted"`
}

// StoreData is one chunk of a store/read_file.
type StoreData struct {
	StreamID string `json:"stream_id"`
	Data     []byte `json:"data"`
}

// CredentialsExpired is sent once when the credentials expire; the session
// then ends with exit code 3.
type CredentialsExpired struct {
	Message string `json:"message"`
}

// PullProgress reports an image pull during sandbox/create. A host draws
// it from the structured fields (layer, phase, bytes); status is the
// provider's own words, for people.
type PullProgress struct {
	Image  string `json:"image"`
	Status string `json:"status"`
	// Layer is the part of the image the event is about (a layer digest's
	// short id); empty for the image as a whole.
	Layer string `json:"layer,omitempty"`
	// Phase is where Layer is, from a closed set; empty for an event that
	// is no step of a layer (resolving the image, its digest).
	Phase PullPhase `json:"phase,omitempty"`
	// Current is Layer's bytes done in this phase.
	Current int64 `json:"current,omitempty"`
	// Total is Layer's bytes expected in this phase.
	Total int64 `json:"total,omitempty"`
}

// PullPhase is a layer's step in an image pull.
type PullPhase string

// The pull phases, in the order a layer goes through them. A layer the
// backend already holds goes straight to complete. Downloaded and complete
// count as done for a progress bar: extracting rereads what is there.
const (
	PullWaiting     PullPhase = "waiting"
	PullDownloading PullPhase = "downloading"
	PullDownloaded  PullPhase = "downloaded"
	PullExtracting  PullPhase = "extracting"
	PullComplete    PullPhase = "complete"
)

// PullPhases is the closed set of PullPhase values.
var PullPhases = []PullPhase{PullWaiting, PullDownloading, PullDownloaded, PullExtracting, PullComplete}

// CancelParams name the request ($/cancelRequest) the host no longer wants;
// the resident still answers it, with cancelled.
type CancelParams struct {
	ID any `json:"id"`
}

// Empty is the result of requests that return nothing.
type Empty struct{}
