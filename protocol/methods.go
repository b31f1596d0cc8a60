package protocol

// Version is the protocol version a host passes to initialize.
const Version = 1

// Requests, host to resident.
const (
	MethodInitialize    = "initialize"
	MethodSandboxCreate = "sandbox/create"
	MethodSandboxExec   = "sandbox/exec"
	MethodExecStdin     = "exec/stdin"
	MethodExecKill      = "exec/kill"
	MethodExecStart     = "exec/start"
	MethodExecAttach    = "exec/attach"
	MethodSandboxExecs  = "sandbox/list_execs"
	MethodSandboxWrite  = "sandbox/write_file"
	MethodSandboxList   = "sandbox/list_owned"
	MethodSandboxOwner  = "sandbox/read_owner"
	MethodSandboxTerm   = "sandbox/terminate"
	MethodStoreVolumes  = "store/list_volumes"
	MethodStoreListDir  = "store/list_dir"
	MethodStoreReadFile = "store/read_file"
	MethodShutdown      = "shutdown"

	MethodSandboxReadFile = "sandbox/read_file"
	MethodSandboxListDir  = "sandbox/list_dir"
	MethodUploadData      = "upload/data"
	MethodExecResize      = "exec/resize"
	MethodCreateVolume    = "store/create_volume"
	MethodDeleteVolume    = "store/delete_volume"
	MethodSandboxWatch    = "sandbox/watch"
	MethodCancelRequest   = "$/cancelRequest"
)

// Notifications, resident to host.
const (
	NotifyExecOutput         = "exec/output"
	NotifyStoreData          = "store/data"
	NotifyCredentialsExpired = "resident/credentials_expired"
	NotifyPullProgress       = "sandbox/pull_progress"
	NotifyWatchEvent         = "sandbox/changed"
)

// Stream names in exec/output.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)
