// Package local is the embedded provider: sandboxes are directories on the
// host and commands are ordinary host processes. It needs no daemon, which
// makes it the default for development.
//
// Where bubblewrap (bwrap) works, each exec runs in namespaces of its own
// (isolate_linux.go, mounts_linux.go): the sandbox's directory is its root
// "/", with the host's system directories (/usr, /bin, /sbin, /lib*, /etc,
// /opt) bound read-only over it so the machine's toolchains work, a /proc
// of its own pid namespace, a minimal /dev, and each volume bound at its
// mount path. Nothing else of the host is there: home directories, /root,
// the resident's state directory, /run and the host's /tmp are not
// mounted (/tmp, /home, /run are the sandbox's own directories, shared by
// its execs and kept until terminate). So a path means the same thing to
// cwd, write_file, the store and the command: /home/evaluser/project is
// root/home/evaluser/project, a volume at /data is the volume. The work
// directory is spec.workdir, by default the sandbox root "/", and HOME
// is "/". The network is a namespace holding only lo unless spec.network
// is "host"; IPC and the host name are the sandbox's own; bwrap sets
// no_new_privs. Recorded, not enforced: image and read_only_root; a
// read-only volume is refused.
//
// cpus, memory_mb and pids_limit are enforced where the resident runs as
// root with cgroup v1 pids, memory and cpu hierarchies (cgroup_linux.go):
// each sandbox with a limit gets a cgroup in each, below the resident's
// own, entered by every exec at fork and removed at terminate; a process
// the memory limit killed reports oom_killed. Elsewhere (unprivileged, or
// cgroup v2 only) they are recorded, not enforced, and resource_limits is
// false.
//
// Without bwrap local isolates almost nothing: a process runs as the
// resident's user with the host's filesystem, network and resources, and
// a volume at an absolute path is refused, because a command that opens
// /data would open the host's /data; only a relative mount path (taken in
// the work directory) is where the commands see it. HOME is then the
// sandbox root's host path. Use it for development and trusted code only.
//
// A sandbox whose lifetime_s ended is ended, not removed: its processes are
// killed and it stays listed as expired (exec and write_file are conflict)
// until it is terminated, as a stopped container does.
//
// What local guarantees either way is the contract: exact owner matching,
// idempotent terminate, env built from an allowlist (never the resident's
// environment), whole-tree kills, paths the resident handles (cwd,
// write_file, the store) that never resolve outside their sandbox or
// volume, and state on disk that a restarted resident picks up.
//
// Layout under StateDir/local:
//
//	sandboxes/<id>/meta.json   id, tags (owner last), created_at, image, spec, expiry
//	sandboxes/<id>/root/       the sandbox's filesystem root, "/" of its isolated execs
//	sandboxes/.creating-<id>/  a sandbox being built; renamed into place when whole
//	trash/<id>-<rand>/         a sandbox being removed; out of sight at once
//	volumes/<name>/            a store volume, bound (unisolated: linked) at spec paths
//	volume-meta/<name>.json    when the volume was created, and its owner tag
//
// Under bwrap each exec also has a pid namespace of its own: it sees and
// can signal only its own processes, the tree kill kills the namespace,
// and a service an exec left is held through a pidfd of the namespace's
// pid 1 until Terminate or an exclusive exec kills it. If the resident
// itself is SIGKILLed, bwrap dies with it but a namespace lives on until a
// later resident terminates the sandbox (found by root directory: every
// isolated process has the sandbox root as its own; an unisolated
// leftover is found by working directory). Without bwrap, execs run
// unisolated in process groups, tracked through /proc, and exclusive is
// refused. Exec needs Linux; elsewhere the package builds and everything
// but Exec works.
package local
