// Package keeperexec adapts the keeper channel (internal/keeper/channel)
// to the provider contract, once for every provider whose sandboxes have
// the keeper as their init: local (a Unix socket) and docker (the
// container's attach stream). A provider opens and holds the channel;
// this package turns what flows over it into provider.Process,
// provider.Attachment, exec specs and the protocol's errors, so that one
// behaviour is had everywhere the keeper serves.
//
// What stays with the provider is only what the keeper cannot know: how
// the sandbox's init ends (Hooks.SandboxEnded), the OOM count where the
// keeper sees no cgroup (Hooks.OOMKilled), and a full pids limit at start.
package keeperexec
