package protocol

import "reflect"

// Call is one method of the wire as a host sees it: its name, whether it is
// a request (answered) or a notification, who sends it, and the Go types of
// its params and result. Catalog is the single list of them, so that the
// schema generator, the resident's dispatch table and the hosts' generated
// types cannot drift apart.
type Call struct {
	Method string
	// FromHost is true for what the host sends, false for what the resident sends.
	FromHost bool
	// Notification calls get no response, so Result is nil.
	Notification bool
	Params       reflect.Type
	Result       reflect.Type
}

func request[P, R any](method string) Call {
	return Call{Method: method, FromHost: true, Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R]()}
}

func notification[P any](method string, fromHost bool) Call {
	return Call{Method: method, FromHost: fromHost, Notification: true, Params: reflect.TypeFor[P]()}
}

// Catalog lists every method and notification of protocol Version, in the
// order docs/protocol.md presents them.
var Catalog = []Call{
	request[InitializeParams, InitializeResult](MethodInitialize),
	request[CreateParams, CreateResult](MethodSandboxCreate),
	request[ExecParams, ExecResult](MethodSandboxExec),
	request[ExecStdinParams, Empty](MethodExecStdin),
	request[ExecKillParams, Empty](MethodExecKill),
	request[ExecParams, ExecStartResult](MethodExecStart),
	request[ExecAttachParams, ExecResult](MethodExecAttach),
	request[SandboxIDParams, ListExecsResult](MethodSandboxExecs),
	request[WriteFileParams, WriteFileResult](MethodSandboxWrite),
	request[UploadDataParams, Empty](MethodUploadData),
	request[SandboxReadFileParams, ReadFileResult](MethodSandboxReadFile),
	request[SandboxListDirParams, ListDirResult](MethodSandboxListDir),
	request[ExecResizeParams, Empty](MethodExecResize),
	request[Empty, ListOwnedResult](MethodSandboxList),
	request[SandboxIDParams, ReadOwnerResult](MethodSandboxOwner),
	request[SandboxIDParams, TerminateResult](MethodSandboxTerm),
	request[Empty, ListVolumesResult](MethodStoreVolumes),
	request[ListDirParams, ListDirResult](MethodStoreListDir),
	request[ReadFileParams, ReadFileResult](MethodStoreReadFile),
	request[VolumeNameParams, Empty](MethodCreateVolume),
	request[VolumeNameParams, Empty](MethodDeleteVolume),
	request[Empty, ListOwnedResult](MethodSandboxWatch),
	request[Empty, Empty](MethodShutdown),
	notification[CancelParams](MethodCancelRequest, true),
	notification[ExecOutput](NotifyExecOutput, false),
	notification[StoreData](NotifyStoreData, false),
	notification[CredentialsExpired](NotifyCredentialsExpired, false),
	notification[PullProgress](NotifyPullProgress, false),
	notification[WatchEvent](NotifyWatchEvent, false),
}

// CallOf finds a method or notification in Catalog by name.
func CallOf(method string) (Call, bool) {
	for _, c := range Catalog {
		if c.Method == method {
			return c, true
		}
	}
	return Call{}, false
}
