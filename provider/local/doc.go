// Package local is the embedded provider: sandboxes are directories on the
// host, in namespaces of their own under bubblewrap. It needs no daemon,
// which makes it the default for development.
//
// Where bubblewrap (bwrap) works, each sandbox is one set of namespaces
// made at create (init_linux.go, mounts_linux.go): one bwrap whose command
// is the keeper (internal/keeper, "keeper serve"), pid 1 of the sandbox's
// pid namespace, detached from the resident (a session of its own; it
// outlives the resident and holds lifetime_s itself). The sandbox's
// directory is its root "/", with the host's system directories (/usr,
// /bin, /sbin, /lib*, /opt) bound read-only over it so the machine's
// toolchains work, a /proc of its own pid namespace, a minimal /dev, each
// volume bound at its mount path, and an /etc of its own (etc_linux.go):
// generated passwd and group (root, the resident's user, nobody) and
// hosts, and only an allowlist of the host's /etc (the dynamic linker's
// cache, CA certificates, time zone, locale, profiles, runtimes'
// settings), read-only; never its accounts, shadow, keys or host name, and
// its resolv.conf only with spec.network "host". Nothing else of the host
// is there: home directories, /root, the resident's state directory, /run
// and the host's /tmp are not mounted (/tmp, /home, /run are the
// sandbox's own directories, kept until terminate). So a path means the
// same thing to cwd, write_file, the store and the command:
// /home/evaluser/project is root/home/evaluser/project, a volume at /data
// is the volume. The work directory is spec.workdir, by default the
// sandbox root "/", and HOME is "/". The network is a namespace holding
// only lo unless spec.network is "host"; IPC and the host name are the
// sandbox's own; bwrap sets no_new_privs. Recorded, not enforced: image and
// read_only_root; a read-only volume is refused.
//
// Every exec is one message on the keeper's channel (chanexec_linux.go),
// a Unix socket the resident binds in the sandbox's private directory
// (beside root/, which is all the sandbox sees) and hands to bwrap as fd 3;
// the keeper holds the only descriptor of it. The keeper runs each exec
// with a mark (a supplementary group no process without CAP_SETGID can
// drop: the commands run with no capability at all), so the tree kill of a
// timeout or cancel finds every process the exec started, whatever it did
// to its ancestry; exclusive kills every marked process first. Execs of a
// sandbox share its pid namespace and see each other, as on Docker; none
// can signal the keeper (pid 1, another uid, non-dumpable). A new resident
// finds the init through init.json (pid, pid namespace, start time) and
// takes the channel over; an init that no longer runs (the machine
// restarted) is started again at the next exec. Terminate kills the init,
// and with it the whole namespace. The keeper also runs a command as
// another user (exec's user, else spec.user, resolved in the sandbox's own
// /etc/passwd), on a pseudo-terminal, and detached (detach_linux.go: it
// keeps the exec, its output ring and its exit status for any later
// resident); write_file, read_file, list_dir and uploads of a running
// sandbox go through it too, as the sandbox's user.
//
// Marks need the keeper to be root in the sandbox's user namespace (it
// keeps CAP_SETGID to set them). A resident that is root runs bwrap
// without a user namespace, so that holds. An unprivileged resident's
// bwrap maps only its own uid, with setgroups denied: its keeper then runs
// unprotected (Conn.Protected is false), tracks each exec by its process
// tree, which a double fork can leave, and exclusive is refused; a
// per-exec cgroup would need a delegated cgroup v2 subtree inside the
// sandbox, which it does not have.
//
// cpus, memory_mb and pids_limit are enforced through cgroups
// (cgroup_linux.go, cgroupv2_linux.go): with cgroup v1 where the resident
// runs as root (its pids, memory and cpu hierarchies), with cgroup v2 where
// the resident's own cgroup is delegated to it (root, or a systemd scope
// with Delegate=yes: it moves itself into a "resident" leaf and enables
// the controllers for its children). Each sandbox with a limit gets a
// cgroup below the resident's, which its init enters at fork (v1: the
// forking thread moves in first; v2: clone3 into the cgroup), so the whole
// sandbox (the keeper is one pid of it) is limited; terminate removes it.
// A process the memory limit killed reports oom_killed. Elsewhere they are
// recorded, not enforced, and resource_limits is false.
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
// and, for an isolated sandbox, beside root/:
//
//	sandboxes/<id>/etc/        its generated /etc (mount points of the shared host entries)
//	sandboxes/<id>/init.json   its running init: host pid, pid namespace inode, start time
//	sandboxes/<id>/init.log    what bwrap and the keeper wrote (why a start failed)
//	sandboxes/<id>/keeper.sock the keeper's listening socket
//	keeper/<digest>/keeper     the embedded keeper, extracted; bound at /.resident
//
// Without bwrap, execs run unisolated in process groups, tracked through
// /proc, and exclusive is refused. Exec needs Linux; elsewhere the package
// builds and everything but Exec works.
package local
