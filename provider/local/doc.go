// Package local is the embedded provider: sandboxes are directories on the
// host and commands are ordinary host processes. It needs no daemon, which
// makes it the default for development.
//
// Local isolates almost nothing. A sandbox process runs as the resident's
// user with the host's filesystem, network and resources; image, network, cpus,
// memory_mb, read_only_root and pids_limit are recorded, not enforced, and a
// read-only volume is refused because it cannot be honoured, and so is a
// volume at an absolute path: a command that opens /data opens the host's
// /data, so only a relative mount path (taken in the work directory) is
// where the sandbox's commands see it. Use it for development and trusted
// code only; use an isolating provider otherwise.
//
// A sandbox whose lifetime_s ended is ended, not removed: its processes are
// killed and it stays listed as expired (exec and write_file are conflict)
// until it is terminated, as a stopped container does.
//
// What local does guarantee is the contract: exact owner matching, idempotent
// terminate, env built from an allowlist (never the resident's environment),
// whole-tree kills, paths the resident handles (cwd, write_file, the store)
// that never resolve outside their sandbox or volume, and state on disk that
// a restarted resident picks up.
//
// Layout under StateDir/local:
//
//	sandboxes/<id>/meta.json   id, tags (owner last), created_at, image, spec, expiry
//	sandboxes/<id>/root/       the sandbox's filesystem root (cwd, HOME, write_file)
//	sandboxes/.creating-<id>/  a sandbox being built; renamed into place when whole
//	trash/<id>-<rand>/         a sandbox being removed; out of sight at once
//	volumes/<name>/            a store volume, linked into sandboxes at spec paths
//	volume-meta/<name>.json    when the volume was created, and its owner tag
//
// Where bubblewrap (bwrap) works, each exec runs in a pid namespace of its
// own (isolate_linux.go): it sees and can signal only its own processes,
// the tree kill kills the namespace, and a service an exec left is held
// through a pidfd of the namespace's pid 1 until Terminate or an exclusive
// exec kills it. If the resident itself is SIGKILLed, bwrap dies with it
// but a namespace lives on until a later resident terminates the sandbox
// (found by working directory, as every leftover is). Without bwrap, execs
// run unisolated in process groups, tracked through /proc, and exclusive is
// refused. Exec needs Linux; elsewhere the package builds and everything
// but Exec works.
package local
