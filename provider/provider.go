package provider

import (
	"context"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
)

// Provider is one compute backend. All methods are safe for concurrent use.
type Provider interface {
	// Info names the provider and says which optional features it has.
	Info() Info

	// Secrets says what this provider considers secret: the resident's own
	// environment variables with these name prefixes are scrubbed (and never
	// passed to sandboxes), and so is anything the token patterns match.
	Secrets() SecretPolicy

	// ApplyAuth receives the host's credentials (already registered with
	// the scrubber). Called once, before any other call but Info/Secrets.
	ApplyAuth(ctx context.Context, creds map[string]string) error

	// OnUnauthorized installs the hook the provider calls when its backend
	// says the credentials are no longer valid (an HTTP 401, say). The hook
	// is safe to call many times and from any goroutine; it does not return
	// an error because there is nothing the provider can do after it.
	OnUnauthorized(hook func(reason string))

	// Create provisions a sandbox and returns its id. tags are host tags,
	// already validated; the provider refuses them again with
	// CheckHostTags (nothing is created), applies them and merges the owner
	// tag (owner.Key=owner.InstallID) LAST. Nothing but the owner tag it
	// merges may leave the sandbox with an owner-shaped tag or label.
	// A sandbox with LifetimeS > 0 must stop by itself after that many
	// seconds even if the resident is gone.
	Create(ctx context.Context, spec protocol.Spec, owner Owner, tags map[string]string) (string, error)

	// Exec starts argv in a sandbox. It returns once the process started.
	// When ctx is done the provider kills the process's whole tree and
	// Wait returns promptly. The resident has already checked ownership.
	Exec(ctx context.Context, sandboxID string, req ExecRequest) (Process, error)

	// ListOwned returns the sandboxes owner owns (Owner.Owns): the owner tag
	// is exactly owner.InstallID and no other owner-shaped tag is present.
	// Never a prefix match; never another install's; never an ambiguous one.
	ListOwned(ctx context.Context, owner Owner) ([]protocol.Sandbox, error)

	// ReadOwner returns who owns a sandbox under ownerKey (OwnerOf over all
	// its tags and labels): "" when nobody does, as for a sandbox with two
	// owner-shaped tags. A missing sandbox is a not_found error.
	ReadOwner(ctx context.Context, sandboxID, ownerKey string) (string, error)

	// Terminate stops and removes a sandbox. Idempotent: a missing sandbox,
	// or one already being removed, is success with existed=false.
	Terminate(ctx context.Context, sandboxID string) (existed bool, err error)

	// Close releases the provider's resources (not its sandboxes).
	Close() error
}

// Owner identifies the install that owns a sandbox: the tag Key (built from
// the host's tag prefix) with value InstallID.
type Owner struct {
	Key       string
	InstallID string
}

// Info describes a provider to the host.
type Info struct {
	Name         string
	Version      string
	Capabilities protocol.Capabilities
	// CallTimeout is the longest a call waits on the provider's backend:
	// past it the call answers transient, however many backend calls it
	// makes, so a hung backend never holds a request longer. An exec's run
	// (bounded by its timeout), a store read's stream and an image pull
	// (bounded by its progress; what follows it gets a fresh bound) are
	// not calls in this sense. 0: the provider sets no bound.
	CallTimeout time.Duration
	// DetachedBufferBytes is how much output a detached exec keeps
	// (Detacher); announced to the host.
	DetachedBufferBytes int64
}

// SecretPolicy is the provider's part of what the scrubber removes. It is
// data: it marshals to JSON with each token pattern's regexp as source text
// and unmarshals by compiling it (hardening.CompileTokenPattern), so a
// policy can cross a process boundary (an external provider, a host that
// wants to scrub as the resident does) and come back the same.
type SecretPolicy struct {
	EnvPrefixes []string                 `json:"env_prefixes"`
	Tokens      []hardening.TokenPattern `json:"token_patterns"`
}

// ExecRequest is a validated exec. The process environment is exactly: a
// minimal PATH and HOME, then the sandbox's spec env, then Env (later wins).
// The provider never adds its own process environment.
type ExecRequest struct {
	Argv  []string
	Env   map[string]string
	Cwd   string
	Stdin bool
	// Exclusive asks that every other process of the sandbox (other execs,
	// and what earlier execs left running) be killed before this command
	// starts, so that nothing else is running beside it when it does: a
	// trusted grader's output is then its own. Killed execs end as killed
	// (ExitStatus.Killed) with their output so far. A provider that cannot
	// honour it refuses the exec with a typed error; it never ignores it.
	Exclusive bool
	// Detach and ID: a detached exec (see Detacher), named ID.
	Detach bool
	ID     string
	// Deadline, unless zero, is when the exec is killed. A detached exec's
	// is enforced inside the sandbox. An attached exec is bounded by Exec's
	// ctx (the resident cancels it at Deadline, once started); a provider
	// with a supervisor in the sandbox hands it KillAt too, so the kill
	// holds when the resident cannot reach the sandbox. Deadline never
	// bounds the start: one already past starts the command, killed at once.
	Deadline time.Time
	// User runs the command as this user instead of the sandbox's (a name
	// in the sandbox's /etc/passwd, a uid, or uid:gid); "" is the
	// sandbox's user (spec.user, else the image's). A provider without
	// capabilities.exec_user never sees it set (the resident refuses).
	// An unknown name is invalid_request with field user.
	User string
	// TTY runs the command on a pseudo-terminal of this size: its output
	// is Stdout (Stderr is empty), and Stdin is open whether or not Stdin
	// was asked. The Process is then a Resizer. A provider without
	// capabilities.tty never sees it set.
	TTY *protocol.WindowSize
}

// KillAt is when the sandbox's supervisor kills the exec: the earlier of
// Deadline and ctx's deadline, zero for neither.
func (r ExecRequest) KillAt(ctx context.Context) time.Time {
	at := r.Deadline
	if d, ok := ctx.Deadline(); ok && (at.IsZero() || d.Before(at)) {
		at = d
	}
	return at
}

// Exec start failures carry a protocol.Reason and field (see
// protocol.ReasonError): a missing program is no_such_file about argv, a
// file that cannot be executed permission_denied about argv, a missing cwd
// no_such_file about cwd (not_directory when it is a file).

// Process is a running exec. Stdout and Stderr are read until EOF by the
// resident, concurrently; Stdin is nil unless ExecRequest.Stdin was set.
type Process interface {
	Stdout() io.Reader
	Stderr() io.Reader
	Stdin() io.WriteCloser
	// Wait blocks until the main process exits and its output is drained
	// (or until the drain grace passes: a background child that keeps
	// stdout open must not keep the exec running). After Wait returns,
	// Stdout and Stderr reach EOF promptly.
	Wait() (ExitStatus, error)
}

// ExitStatus is how a process ended.
type ExitStatus struct {
	// Code is the exit code, or 128+signal when a signal ended it.
	Code int
	// Signal names the signal that ended the process, if one did.
	Signal string
	// OOMKilled is set when the memory limit killed the process.
	OOMKilled bool
	// Killed is set when the provider killed the process to run an
	// exclusive exec in its sandbox: the host then sees it as killed.
	Killed bool
	// TimedOut is set when a detached exec was killed at its Deadline.
	TimedOut bool
}

// Store is the optional persistent store: named volumes a host can browse
// with no sandbox running. Paths are inside the volume: "" and "/" are its
// root, an absolute path is taken inside it, and a path with a ".." element
// is invalid_request. A provider never resolves a path outside the volume (a
// symlink that leads out is refused, never followed).
//
// Volumes are owner-scoped (AccessTo): a call sees owner's own volumes and
// those Config.AllowVolumes grants, and a volume of another install, or one
// nobody owns and nobody granted, answers VolumeNotFound exactly as a missing
// one does. The same rule holds for spec.volumes in Create, which also
// labels a volume it creates with the owner tag.
type Store interface {
	ListVolumes(ctx context.Context, owner Owner) ([]protocol.Volume, error)
	// ListDir returns at most limit entries and whether more exist, without
	// reading the whole directory when it is larger.
	ListDir(ctx context.Context, owner Owner, root, path string, limit int) (entries []protocol.DirEntry, truncated bool, err error)
	// ReadFile streams a regular file; the resident reads it to EOF or
	// closes it early. Close may come from another goroutine while a Read
	// is blocked (the request ended): it must make that Read return.
	ReadFile(ctx context.Context, owner Owner, root, path string) (io.ReadCloser, error)
}

// FileWriter is the optional ability to put a file into a running sandbox.
// The write is made with the permissions of the sandbox's own user, as a
// command in it would make it: one that user could not make (a read-only
// file, a directory it cannot write) is refused with invalid_request and
// changes nothing. A relative path is taken in the sandbox's work directory
// (the default exec cwd), an absolute one from its root. Missing parent
// directories are created (0755). mode holds the permission bits (bits above
// 0o777 are ignored), or is nil when the host gave none: a new file then
// gets DefaultFileMode and an existing file keeps its own mode. The file's
// modification time is the time of the write. A sandbox that is not running
// (expired, stopped) is conflict.
type FileWriter interface {
	WriteFile(ctx context.Context, sandboxID, path string, data []byte, mode *uint32) error
}

// DefaultFileMode is the mode of a file that write_file creates when the
// host gives none.
const DefaultFileMode = 0o644

// OwnerMemory is the optional ability to answer ReadOwner without asking
// the backend, for a provider whose owner tags can never change once a
// sandbox exists (Docker labels are fixed at create). KnownOwner returns what
// ReadOwner would (OwnerOf) for a sandbox the provider has already created or read, and
// ok=false for any other. It does not say whether the sandbox still exists,
// so it may gate only a call that then fails not_found by itself for a
// missing sandbox (exec), never read_owner or terminate.
type OwnerMemory interface {
	KnownOwner(sandboxID, ownerKey string) (owner string, ok bool)
}

// CredentialSecrets is the optional ability to name the secrets inside a
// credential value in the provider's own format (a Docker config's base64
// "auth" field is "user:password": its decoded text and the password). A
// backend or tool that echoes one part would show it alone, so the resident
// registers each part with the scrubber besides the whole value and the
// value's secret-looking JSON fields. key is the credentials key; the
// result may be empty, never an error (a value the provider cannot read is
// ApplyAuth's to refuse).
type CredentialSecrets interface {
	CredentialSecrets(key, value string) []string
}

// FixedOwnerKey is the optional ability of a provider that writes one owner
// tag key of its own whatever the host's tag prefix (an external provider
// announcing owner_key). The resident then owns sandboxes by that key.
type FixedOwnerKey interface {
	OwnerKey() string
}

// Config is what a provider factory receives.
type Config struct {
	// StateDir is a directory the provider may keep state in.
	StateDir string
	Logger   *zap.Logger
	// Notify sends a progress notification to the host (image pulls);
	// never nil.
	Notify func(method string, params any)
	// Now is the clock; tests may replace it.
	Now func() time.Time
	// AllowVolumes are the volumes the resident did not create that the
	// operator lets every install browse and mount (--allow-volume).
	AllowVolumes []VolumeGrant
	// Args are the command line's words after "--": the external
	// provider's program and its arguments.
	Args []string
	// Options are the operator's settings for this provider
	// (--provider-opt key=value), read through the Options it declared
	// with Register; Open has refused any other key.
	Options Options
}
