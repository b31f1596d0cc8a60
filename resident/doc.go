// Package resident is the JSON-RPC server a host talks to: it owns the
// session lifecycle (initialize, expiry, shutdown), checks ownership before
// every provider call on a sandbox, runs execs with timeouts and output caps,
// and scrubs every byte it writes.
//
// Serve takes any io.ReadWriteCloser; cmd/resident passes stdio, tests pass a
// pipe. Nothing below cmd/ touches os.Stdin or os.Stdout.
//
// Two chokepoints keep secrets in: every frame written through the JSON-RPC
// connection is scrubbed as JSON text just before it is framed, and payloads
// that travel as base64 (exec output, file data) are scrubbed as raw bytes by
// a streaming scrubber before they are encoded. Logs are scrubbed by the
// logger's sink (see cmd/resident).
package resident
