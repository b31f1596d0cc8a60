// Package wire is the external provider protocol (docs/provider-protocol.md):
// its method names and message types, shared by the resident's client side
// (package external) and the server side that serves a Go provider over it
// (package external/serve).
package wire

import "github.com/resident-dev/resident/protocol"

// Version is the protocol version both sides pass in initialize.
const Version = 1

// DescribeEnv, set to 1 in a provider's environment, asks it for one frame
// holding its InitializeResult on stdout, then exit 0.
const DescribeEnv = "RESIDENT_PROVIDER_DESCRIBE"

// Requests, resident to provider.
const (
	MethodInitialize  = "initialize"
	MethodAuthApply   = "auth/apply"
	MethodAuthSecrets = "auth/secrets"
	MethodCreate      = "sandbox/create"
	MethodListOwned   = "sandbox/list_owned"
	MethodReadOwner   = "sandbox/read_owner"
	MethodTerminate   = "sandbox/terminate"
	MethodWriteFile   = "sandbox/write_file"
	MethodExecStart   = "exec/start"
	MethodExecStdin   = "exec/stdin"
	MethodExecKill    = "exec/kill"
	MethodExecResize  = "exec/resize"
	// Files of a running sandbox and volume admin (capabilities
	// sandbox_files, upload, volume_admin).
	MethodSandboxReadFile = "sandbox/read_file"
	MethodSandboxListDir  = "sandbox/list_dir"
	MethodSandboxUpload   = "sandbox/upload"
	MethodUploadData      = "upload/data"
	MethodCreateVolume    = "store/create_volume"
	MethodDeleteVolume    = "store/delete_volume"
	// Detached execs (capability detach, §4.1 of the page).
	MethodExecStartDetached = "exec/start_detached"
	MethodExecAttach        = "exec/attach"
	MethodExecRelease       = "exec/release"
	MethodExecList          = "exec/list"
	MethodExecKillDetached  = "exec/kill_detached"
	MethodListVolumes       = "store/list_volumes"
	MethodListDir           = "store/list_dir"
	MethodReadFile          = "store/read_file"
	MethodShutdown          = "shutdown"
	MethodCancel            = "$/cancelRequest"
	NotifyExecCredit        = "exec/credit"
	NotifyStoreCredit       = "store/credit"
	NotifyExecOutput        = "exec/output"
	NotifyExecExit          = "exec/exit"
	NotifyStoreData         = "store/data"
	NotifyUnauthorized      = "provider/unauthorized"
	NotifyProgress          = "provider/progress"
)

// InitializeParams opens a session with a provider.
type InitializeParams struct {
	ProtocolVersion int     `json:"protocol_version"`
	ResidentVersion string  `json:"resident_version"`
	MaxFrameBytes   int     `json:"max_frame_bytes"`
	ExecWindowBytes int64   `json:"exec_window_bytes"`
	CallTimeoutS    float64 `json:"call_timeout_s"`
	// ConnWindowBytes is each direction's window of a connection stream
	// (§4.3), for a provider that announces Connections.
	ConnWindowBytes int64 `json:"conn_window_bytes,omitempty"`
}

// InitializeResult is the provider's description of itself.
type InitializeResult struct {
	ProtocolVersion int                   `json:"protocol_version"`
	Name            string                `json:"name"`
	Version         string                `json:"version"`
	Capabilities    protocol.Capabilities `json:"capabilities"`
	Secrets         Secrets               `json:"secrets"`
	// OwnerKey, when set, is the fixed owner tag key the provider writes.
	OwnerKey string `json:"owner_key,omitempty"`
	// DetachedBufferBytes is how much output a detached exec keeps
	// (capabilities.detach).
	DetachedBufferBytes int64 `json:"detached_buffer_bytes,omitempty"`
	// Connections: the provider serves conn/open (§4.3), so forwarded and
	// egress connections need no relay exec each. Absent in older
	// providers, which keep the relay.
	Connections bool `json:"connections,omitempty"`
	// FixedOwners: a sandbox's owner tags never change once it exists and
	// its id is never reused, so the resident may remember read_owner's
	// answers and those it created with, and skip read_owner before an
	// exec. Absent: asked each time.
	FixedOwners bool `json:"fixed_owners,omitempty"`
}

// Secrets is a provider's secret policy as data.
type Secrets struct {
	EnvPrefixes   []string       `json:"env_prefixes"`
	TokenPatterns []TokenPattern `json:"token_patterns"`
}

// TokenPattern is a token shape as RE2 source; Prefixes and MaxLen are
// derived by the resident when absent.
type TokenPattern struct {
	Name     string   `json:"name"`
	Regexp   string   `json:"regexp"`
	Prefixes []string `json:"prefixes,omitempty"`
	MaxLen   int      `json:"max_len,omitempty"`
}

// Owner names the owner tag of a sandbox.
type Owner struct {
	Key       string `json:"key"`
	InstallID string `json:"install_id"`
}

type AuthApplyParams struct {
	Credentials map[string]string `json:"credentials"`
}

// AuthSecretsParams ask which secrets hide inside one credential value in
// the provider's own format (a Docker config's base64 auth), so the
// resident scrubs those parts too. Optional: method-not-found means none.
type AuthSecretsParams struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type AuthSecretsResult struct {
	Secrets []string `json:"secrets"`
}

type CreateParams struct {
	Spec  protocol.Spec     `json:"spec"`
	Owner Owner             `json:"owner"`
	Tags  map[string]string `json:"tags"`
}

type CreateResult struct {
	SandboxID string `json:"sandbox_id"`
}

type ListOwnedParams struct {
	Owner Owner `json:"owner"`
}

// ListOwnedResult lists sandboxes as the host's wire does (protocol.Sandbox).
type ListOwnedResult struct {
	Sandboxes []protocol.Sandbox `json:"sandboxes"`
}

type ReadOwnerParams struct {
	SandboxID string `json:"sandbox_id"`
	OwnerKey  string `json:"owner_key"`
}

type ReadOwnerResult struct {
	Owner string `json:"owner"`
}

type SandboxParams struct {
	SandboxID string `json:"sandbox_id"`
}

type TerminateResult struct {
	Existed bool `json:"existed"`
}

type WriteFileParams struct {
	SandboxID string  `json:"sandbox_id"`
	Path      string  `json:"path"`
	Data      []byte  `json:"data"`
	Mode      *uint32 `json:"mode,omitempty"`
}

type ExecStartParams struct {
	ExecID    string            `json:"exec_id"`
	SandboxID string            `json:"sandbox_id"`
	Argv      []string          `json:"argv"`
	Env       map[string]string `json:"env"`
	Cwd       string            `json:"cwd"`
	Stdin     bool              `json:"stdin"`
	// Exclusive: kill every other process of the sandbox first; a provider
	// that cannot must refuse the exec (invalid_request), never ignore it.
	Exclusive bool `json:"exclusive,omitempty"`
	// User and TTY as in protocol.md's sandbox/exec (capabilities
	// exec_user and tty).
	User string               `json:"user,omitempty"`
	TTY  *protocol.WindowSize `json:"tty,omitempty"`
}

type ExecResizeParams struct {
	ExecID string `json:"exec_id"`
	Rows   uint16 `json:"rows"`
	Cols   uint16 `json:"cols"`
}

// SandboxReadFileParams stream a running sandbox's file as store/data
// under StreamID, with store/credit, answering {} at its end.
type SandboxReadFileParams struct {
	SandboxID string `json:"sandbox_id"`
	Path      string `json:"path"`
	StreamID  string `json:"stream_id"`
}

type SandboxListDirParams struct {
	SandboxID string `json:"sandbox_id"`
	Path      string `json:"path"`
	Limit     int    `json:"limit"`
}

// UploadParams open an atomic write of a file of any size, fed by
// upload/data under UploadID; answered with the bytes written once the
// file is in place.
type UploadParams struct {
	SandboxID string  `json:"sandbox_id"`
	Path      string  `json:"path"`
	Mode      *uint32 `json:"mode,omitempty"`
	UploadID  string  `json:"upload_id"`
}

type UploadResult struct {
	Bytes int64 `json:"bytes"`
}

// UploadData is the next piece of an upload, answered once accepted. It may
// arrive before its sandbox/upload does: the provider holds it until then.
// Abort fails the upload: the provider removes what it wrote, then answers
// the sandbox/upload with an error.
type UploadData struct {
	UploadID string `json:"upload_id"`
	Data     []byte `json:"data,omitempty"`
	EOF      bool   `json:"eof,omitempty"`
	Abort    bool   `json:"abort,omitempty"`
}

type VolumeParams struct {
	Owner Owner  `json:"owner"`
	Name  string `json:"name"`
}

type ExecStdinParams struct {
	ExecID string `json:"exec_id"`
	Data   []byte `json:"data,omitempty"`
	EOF    bool   `json:"eof,omitempty"`
}

type ExecIDParams struct {
	ExecID string `json:"exec_id"`
}

type ExecCredit struct {
	ExecID string `json:"exec_id"`
	Bytes  int64  `json:"bytes"`
}

type ExecOutput struct {
	ExecID string `json:"exec_id"`
	Stream string `json:"stream"`
	Data   []byte `json:"data"`
	// Offset: an attachment's chunks carry the offset of their first byte
	// in the detached exec's output.
	Offset int64 `json:"offset,omitempty"`
}

// DetachedStartParams start a detached exec named ExecID in its sandbox.
type DetachedStartParams struct {
	SandboxID string            `json:"sandbox_id"`
	ExecID    string            `json:"exec_id"`
	Argv      []string          `json:"argv"`
	Env       map[string]string `json:"env"`
	Cwd       string            `json:"cwd"`
	Stdin     bool              `json:"stdin"`
	Exclusive bool              `json:"exclusive,omitempty"`
	// DeadlineUnixMS, unless 0, is when the provider kills it.
	DeadlineUnixMS int64                `json:"deadline_unix_ms,omitempty"`
	User           string               `json:"user,omitempty"`
	TTY            *protocol.WindowSize `json:"tty,omitempty"`
}

// AttachParams open an attachment, named AttachID as an exec is: its
// output, credit, stdin and exit travel under that id.
type AttachParams struct {
	AttachID  string `json:"attach_id"`
	SandboxID string `json:"sandbox_id"`
	ExecID    string `json:"exec_id"`
	Offset    int64  `json:"offset"`
}

type AttachResult struct {
	Offset int64 `json:"offset"`
	Lost   int64 `json:"lost"`
	Stdin  bool  `json:"stdin"`
}

type DetachedExecParams struct {
	SandboxID string `json:"sandbox_id"`
	ExecID    string `json:"exec_id"`
}

type ListExecsResult struct {
	Execs []protocol.ExecInfo `json:"execs"`
}

// ExecExit ends an exec: exactly one per started exec.
type ExecExit struct {
	ExecID    string `json:"exec_id"`
	Code      int    `json:"code"`
	Signal    string `json:"signal,omitempty"`
	OOMKilled bool   `json:"oom_killed,omitempty"`
	// Killed: the provider killed it for another exec's exclusive start
	// (or, for an attachment, by exec/kill_detached).
	Killed bool `json:"killed,omitempty"`
	// TimedOut: a detached exec killed at its deadline.
	TimedOut bool   `json:"timed_out,omitempty"`
	Error    *Error `json:"error,omitempty"`
}

// Error is a JSON-RPC error object with the resident's kind.
type Error struct {
	Code    int64     `json:"code"`
	Message string    `json:"message"`
	Data    ErrorData `json:"data"`
}

// ErrorData is error.data: the kind, and the reason and field of a failure
// about a file, a directory or a program (protocol.Reason).
type ErrorData struct {
	Kind   protocol.Kind   `json:"kind"`
	Reason protocol.Reason `json:"reason,omitempty"`
	Field  string          `json:"field,omitempty"`
	// UseRelay, on a conn/open's error: this connection cannot be opened
	// as a stream here (no way into this sandbox but an exec); the
	// resident runs net/commands' relay or attach instead.
	UseRelay bool `json:"use_relay,omitempty"`
}

// DataOf is the wire's error.data for err.
func DataOf(err error) ErrorData {
	d := protocol.DataOf(err)
	return ErrorData{Kind: d.Kind, Reason: d.Reason, Field: d.Field}
}

// Error gives a wire error back its kind (transient when unknown) and, when
// known, its reason.
func (d ErrorData) Error(msg string) error {
	kind := d.Kind
	if !kind.Known() {
		kind = protocol.KindTransient
	}
	e := &protocol.Error{Kind: kind, Msg: msg}
	// A reason that contradicts its kind is dropped: the kind is what
	// hosts branch on first.
	if d.Reason.Known() && d.Reason.Kind() == kind {
		e.Reason, e.Field = d.Reason, d.Field
	}
	return e
}

type ListVolumesResult struct {
	Volumes []protocol.Volume `json:"volumes"`
}

// ListVolumesParams names the install asking: store volumes are
// owner-scoped like sandboxes (protocol.md §4.10).
type ListVolumesParams struct {
	Owner Owner `json:"owner"`
}

type ListDirParams struct {
	Owner Owner  `json:"owner"`
	Root  string `json:"root"`
	Path  string `json:"path"`
	Limit int    `json:"limit"`
}

type ListDirResult struct {
	Entries   []protocol.DirEntry `json:"entries"`
	Truncated bool                `json:"truncated"`
}

type ReadFileParams struct {
	Owner    Owner  `json:"owner"`
	Root     string `json:"root"`
	Path     string `json:"path"`
	StreamID string `json:"stream_id"`
}

type StoreCredit struct {
	StreamID string `json:"stream_id"`
	Bytes    int64  `json:"bytes"`
}

type StoreData struct {
	StreamID string `json:"stream_id"`
	Data     []byte `json:"data"`
}

type Unauthorized struct {
	Reason string `json:"reason"`
}

type CancelParams struct {
	ID any `json:"id"`
}

// Empty is the result of requests that return nothing.
type Empty struct{}
