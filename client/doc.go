// Package client is the host half of resident's wire protocol: it spawns a
// resident (or attaches to a stream to one), opens the session, and offers
// one typed method per protocol method. Reading this page is the quickest
// way to learn the protocol; docs/protocol.md is the full contract.
//
// # A session
//
// A host spawns the resident and owns its stdin and stdout: frames go in
// and out there, LSP-style ("Content-Length: N\r\n\r\n" and N bytes of
// JSON-RPC 2.0). Its stderr carries log lines (Options.Stderr).
//
//	c, err := client.Spawn(exec.Command("resident", "--provider", "local"), client.Options{})
//	info, err := c.Initialize(ctx, protocol.InitializeParams{InstallID: "my-app-7f3a"}) // first, and once
//	id, err := c.Create(ctx, protocol.CreateParams{Tags: map[string]string{"task": "build"}})
//	res, err := c.Exec(ctx, protocol.ExecParams{SandboxID: id, Argv: []string{"make"}},
//		client.Streams{Stdout: os.Stdout, Stderr: os.Stderr})
//	existed, err := c.Terminate(ctx, id)
//	err = c.Shutdown(ctx)
//	err = c.Close() // closes stdin, waits for exit, kills after CloseGrace
//
// Initialize reports the provider, its capabilities (which optional methods
// exist) and every limit. The install id names who owns what: every sandbox
// carries it as a tag, and a resident started later with the same install id
// sees the same sandboxes, so after a crash ListOwned finds what the last
// session left and Terminate (idempotent) reaps it.
//
//	| method             | Client method  |
//	|--------------------|----------------|
//	| initialize         | Initialize     |
//	| sandbox/create     | Create         |
//	| sandbox/exec       | Exec           |
//	| exec/stdin         | WriteStdin     |
//	| exec/kill          | Kill           |
//	| sandbox/write_file | WriteFile      |
//	| sandbox/list_owned | ListOwned      |
//	| sandbox/read_owner | ReadOwner      |
//	| sandbox/terminate  | Terminate      |
//	| store/list_volumes | ListVolumes    |
//	| store/list_dir     | ListDir        |
//	| store/read_file    | ReadFile       |
//	| shutdown           | Shutdown       |
//	| $/cancelRequest    | cancel the ctx |
//
// Parameters and results are the wire types of package protocol, unchanged.
//
// # Exec and streaming
//
// The resident sends a process's output as exec/output notifications while
// it runs, and sends them all before the exec's response. Exec writes them
// to Streams.Stdout and Streams.Stderr byte for byte, and returns when the
// response arrives, so all output is written by then. Streams.Stdin is
// forwarded with exec/stdin, chunk by chunk, and its end closes the
// process's stdin. An exec's own timeout, exit code and signal are part of
// its result, not an error.
//
// # Cancellation
//
// Every method takes a context. When it ends before the answer, the client
// sends $/cancelRequest for that request and keeps waiting for the one
// answer the resident still owes; a cancelled exec has its process tree
// killed. The error then matches both ErrCancelled and the context's error.
// (Should a resident answer with a result instead, the client returns it:
// the work was done.)
//
// # Errors
//
// An error response is an *Error with the JSON-RPC code, the kind
// (error.data.kind) and a message. Branch on the kind, with errors.Is and
// one sentinel per kind (ErrNotFound, ErrConflict, ...) or with KindOf.
// A resident that exits or breaks its stream while calls are in flight gives
// them an *ExitError (errors.Is(err, ErrExited)) with its exit code and its
// last log line, never a hang.
//
// Credentials expiry is its own case. When the credentials passed to
// Initialize expire, or the provider's backend refuses them, the resident
// sends resident/credentials_expired once, answers in-flight work
// unauthorized and exits with code 3. The client closes Expired(), calls
// Options.OnCredentialsExpired, and fails every later call fast; all of
// these errors match ErrCredentialsExpired. The way on is a new resident with
// fresh credentials and the same install id.
//
// # Why its own read loop
//
// The resident serves with github.com/sourcegraph/jsonrpc2, but this
// client reads and writes frames itself (protocol.FrameReader and
// protocol.AppendFrame, with the loop in conn.go), because a host needs
// four things that library's client side does not give:
//
//   - Cancellation that still waits. Its Call returns ctx.Err() the moment
//     the context ends, sends no $/cancelRequest and drops the answer; the
//     protocol promises one answer after $/cancelRequest, and the caller
//     should get it (an exec's output is complete only then).
//   - A clear death. A resident that exits mid-call should fail the call
//     with its exit code and last words, and an error answer with "id": null
//     (sent before an exit with code 2) must not be matched to any request.
//   - Exact, bounded frame reads, the same code the resident uses, and a
//     request over the announced max_frame_bytes refused locally instead of
//     ending the session.
//   - Speed where it counts. Nearly every frame of a big transfer is an
//     exec/output or store/data; the loop decodes them in one pass
//     (fastpath.go), which tripled the measured output throughput
//     (BenchmarkExecOutput).
//
// Data notifications are written to their Streams on the read loop, in
// arrival order, which is what makes "all output before the response" hold
// for Exec; a slow Streams writer therefore slows the whole client. Event
// callbacks (Options) run in order on a goroutine of their own, so they may
// block or call the Client.
package client
