// Package keeper is the resident's side of the keeper, the static helper a
// provider puts into every sandbox (./cmd/keeper, embedded prebuilt by
// ./keeperbin, speaking ./keeperproto): the command lines that start it,
// the status line it answers with, and the control frames (stdin data,
// EOF, kill) written on a run's stdin.
//
// None of it knows how the bytes travel: a provider brings the transport
// (Docker's hijacked exec connection and its multiplexed output) and hands
// this package the line it read and the connection to write on. So any
// provider that can run a command in a sandbox with a stdin and a stdout
// can use the keeper: Docker today, Kubernetes next.
package keeper
