// Package docker is the Docker provider: each sandbox is a container on a
// Docker engine, driven through the Engine API (github.com/moby/moby/client;
// no docker CLI anywhere). The engine is the one the usual environment names:
// DOCKER_HOST (unix or tcp, local or remote), DOCKER_TLS_VERIFY,
// DOCKER_CERT_PATH, DOCKER_API_VERSION. The API version is negotiated down
// to the engine's (1.40 at the oldest, Docker 19.03). Linux engines on amd64
// and arm64 are supported.
//
// # Hardened defaults, and how a host changes them
//
//	capabilities       none for any command: CapDrop ALL, then only    fixed
//	                   KILL, SETUID, SETGID, SETPCAP for the keepers,
//	                   which empty the bounding set of every command
//	                   they start (so no command, nor anything it
//	                   execs, ever holds one); see "The keeper"
//	no-new-privileges  on: setuid binaries gain nothing                fixed
//	privileged         never; no host path or Docker socket is ever    fixed
//	                   mounted: only named volumes
//	init               the keeper ("keeper serve -stdio") is pid 1,    --provider-opt exec=exec:
//	                   reaps zombies and serves the channel; stdin     docker-init and "keeper
//	                   open, log driver none                           alive", as before
//	processes          512 (pids limit; stops fork bombs). Threads     spec.pids_limit
//	                   count: over the channel an exec holds its own
//	                   processes only (the serving keeper's threads
//	                   are the sandbox's, once); on the exec path
//	                   each holds ~9 more (a keeper run), so about 50
//	                   run at once. The next is refused as quota,
//	                   naming pids_limit (pids.go)
//	network            none (only lo)                                  spec.network: "bridge" or a
//	                                                                   network name; "host" and
//	                                                                   "container:..." are refused,
//	                                                                   a network the engine lacks
//	                                                                   is invalid_request
//	cpu, memory        unlimited; memory, when set, without swap       spec.cpus, spec.memory_mb (>= 6)
//	root filesystem    writable                                        spec.read_only_root: then /tmp
//	                                                                   and the workdir are scratch
//	                                                                   volumes (disk, not memory),
//	                                                                   removed with the sandbox; the
//	                                                                   workdir is /work when neither
//	                                                                   the spec nor the image names one
//	lifetime           until terminated                                spec.lifetime_s: the sandbox
//	                                                                   stops itself, resident or not,
//	                                                                   and is listed expired until
//	                                                                   terminated
//	restart policy     none; IPC namespace private                     fixed
//	stop signal        SIGKILL: the keeper ignores SIGTERM             fixed
//	user, workdir      the image's                                     spec.workdir
//	environment        image ENV + spec.env (+ PATH if neither has      spec.env, exec env
//	                   one); never the resident's own
//	store volumes      created (labelled with the owner tag) when       spec.volumes[].read_only
//	                   spec.volumes names a missing one; another
//	                   install's, or one not made by this provider,
//	                   is not_found unless --allow-volume grants it
//
// # The keeper
//
// A sandbox's image may have no shell, no sleep, no kill. So the provider
// brings a tiny static helper, the keeper (internal/keeper/cmd/keeper, embedded by
// internal/keeper/keeperbin for amd64 and arm64), in a read-only volume named after
// its digest ("resident-keeper-<digest>") mounted at /.resident in every
// sandbox, and in a one-file image ("resident-keeper:<digest>") imported from
// a tarball for store helpers. Both are made on first use per engine and
// reused. The keeper:
//
//   - keeps the sandbox up ("alive", the container's command under
//     docker-init) and, with lifetime_s, exits after it, which stops the
//     container even if no resident is left. A stopped sandbox stays listed
//     (state "expired" when its lifetime ran out, else "stopped") until
//     terminated, so a host sees what happened and reaps it;
//   - runs every exec ("run"): it reports "started" (or why not: no such
//     cwd or executable) on stdout before the child exists. The child runs
//     as the exec's user (root) with one more supplementary group, the
//     exec's mark (a gid derived from its run token, keeperproto.Mark), and
//     no capability, so neither it nor any descendant can drop the mark. On
//     a kill the keeper SIGSTOPs and SIGKILLs every process carrying the
//     mark until none is left, then exits 137: killing the keeper's child's
//     parent, double-forking or setsid change nothing. With -exclusive it
//     first does the same for every mark (every other exec's processes).
//
// Every keeper protects itself first (privilege.go in the keeper): it
// switches to a uid of its own (keeperproto.KeeperUID) keeping only the
// capabilities it needs (CAP_KILL to signal root processes; SETUID and
// SETGID to start the command as root with its mark), becomes non-dumpable,
// and empties its bounding set. A process of the sandbox runs as root
// without CAP_KILL, so it may signal only processes of uid 0: not a keeper.
// It cannot trace a keeper or open its /proc/PID/fd, mem or environ: those
// need a dumpable target whose capabilities the caller holds too. It can
// list the numbers in a keeper's /proc/PID/fd (a non-dumpable process's
// /proc entries belong to root) and read its status and cmdline, nothing
// more. Why the four capabilities are safe: the container's bounding set
// holds them, but no command gets them (each keeper empties its own bounding
// set before starting one, and no-new-privileges stops file capabilities
// and setuid binaries); the only other holder is docker-init (pid 1), which
// a capability-less process cannot trace and whose fatal signals the kernel
// drops from inside its namespace; the signals it forwards reach "alive",
// which ignores them. An exec the engine starts without the keeper (a
// docker exec by an operator) would hold them: the provider never does.
//
// An image whose USER is not root gives the keeper no capabilities: it then
// runs as before, unprotected (the exec's tree is killed as the keeper's
// descendants, which a command that kills the keeper escapes), and
// exclusive is refused as invalid_request.
//
// # The keeper channel
//
// A sandbox is made in one of two exec modes, recorded in the label
// LabelExecMode. In the channel mode (the default) the keeper is the
// container's init, "keeper serve -stdio -lifetime S", and the provider
// holds one long-lived, multiplexed channel to it (internal/keeper/channel,
// docs/keeper-channel.md) on the container's attach stream: every exec, its
// stdin, stdout, stderr, signals, resize and exit, every detached exec and
// every file operation of the sandbox is frames on it, so an exec is one
// message round trip and one fork in the sandbox, not three engine calls
// and a runc exec. Why the attach stream is said in channel.go. The channel
// is opened at create (a keeper that cannot serve is found there: create
// then falls back to the exec mode and logs it), reopened by the first call
// after a break (the execs it carried end transient; the keeper kills
// them when the next holder takes over, or when the lease runs out), and
// taken over by a new resident (the keeper's generation fence: the old
// holder's frames are refused from then on, its non-detached execs are
// killed, detached ones go on). Terminate and Close close it. The shared
// adapter from the channel to the provider contract is provider/keeperexec,
// the same as local's.
//
// Over the channel an exec may run as another user (ExecRequest.User,
// spec.user, resolved in the sandbox's /etc/passwd; the command holds no
// capability), on a terminal (tty, exec/resize), and detached (Detacher:
// the keeper keeps its output in a ring and its exit; a later resident
// attaches from an offset). The exec mode (--provider-opt exec=exec, and a
// sandbox an older resident made, which has no LabelExecMode) keeps
// everything below: a docker exec of "keeper run" per command, the archive
// endpoints and per-call keeper execs for files; it refuses users,
// terminals and detached execs by name.
//
// # Exec (the exec mode)
//
// An exec is one hijacked connection: stdout and stderr demultiplexed and
// streamed as they come, with backpressure; the exec's stdin carries framed
// control messages to the keeper (stdin data, only when the host asked for
// stdin; EOF; kill). The environment goes through the API, never on a
// command line. Relative cwd is taken from "/", and ".." stops there.
//
// Completion is the keeper's (the main process's) exit as the engine's exec
// state reports it, polled at most every 250ms, not the end of the stream: a
// background child holding stdout open delays Wait by at most 300ms once
// silent (5s at most in all), and is left running. The exit code is the
// child's; 128+n is read as signal n (as shells do).
//
// Kill (context cancelled or past its deadline): the kill frame; if the exec
// has not ended 1s later (a stdin write may hold the connection), a second
// exec runs "keeper kill". The keeper also enforces the context's deadline by
// itself, and kills the tree when its control stream ends (the resident died
// or dropped the connection), so nothing of an exec outlives its owner.
//
// Exclusive (ExecRequest.Exclusive): the keeper first kills every process
// that carries any exec's mark, the services of execs that ended included,
// then starts the command, whose output and status are then its own; see
// "What a host can trust" in docs/protocol.md for what a plain exec's are.
//
// OOM: an exec that ends with 137 while the sandbox's cgroup OOM-kill counter
// grew (the keeper reads it at start; a short exec reads it again) has
// ExitStatus.OOMKilled set. An OOM kill of a concurrent exec in the same
// sandbox in that window counts too. Every command the keeper starts runs
// at oom_score_adj 1000 and the keeper at the container's own score, so the
// OOM killer never takes the sandbox's init before its commands.
//
// Known limits: a keeper is root for the instant between its start and its
// switch to KeeperUID (before the command exists), and a process of the
// sandbox that kills or stops it then makes that exec fail (transient, a
// stopped one once the start's 30s bound passes); the
// corrupted-stream and bad-status cases are transient too (wait.go,
// exec.go). If the connection to the engine drops mid-exec while the
// engine stays up, the engine itself records the exec as exited with 126;
// the keeper kills the tree.
//
// # Files and the store
//
// write_file runs "keeper put" in the sandbox, as the container's user with
// its capabilities (none): a write that user could not make is refused, the
// mtime is the write's, missing parents are created (0755), the mode is
// honoured (0777 bits; an omitted one keeps an existing file's). Not the
// archive API, which writes as the engine's root past every permission. The store is Docker named volumes
// archive API, which writes as the engine's root past every permission. The
// store is Docker named volumes labelled as store volumes of one install;
// list_volumes lists only that install's and the operator's grants
// (provider.AccessTo). list_dir and
// read_file run a short-lived helper container (the keeper image, the volume
// mounted read-only, no network, no capability but CAP_DAC_READ_SEARCH,
// removed when done) whose keeper opens the path in one step beneath the
// volume (internal/beneath): ".." and every symlink on the path are refused
// (invalid_request), wherever it leads; a symlink is listed as one.
// list_dir reads at most limit+1 entries, in directory order; read_file
// streams, never holding a file whole. A helper lives as long as its
// request: it holds the engine's attach of its stdin as a lease and exits
// when that ends, also when the resident dies. The sweep at start
// (ApplyAuth, sweep.go) removes a helper that was never started within 5
// minutes by the engine's clock, exited ones, and the keeper volumes and
// images of other keeper digests that no container uses.
//
// # Ownership and labels
//
// Everything the provider creates carries labels under "dev.resident."
// (LabelManaged, LabelRole, ...); host tags may not use that namespace. Host
// tags are labels as given, and the owner tag is merged last. list_owned is
// an exact label match done by the engine and checked again; a container
// without our labels, or with another owner, is never listed, touched or
// removed. Sandbox ids are full 64-hex container ids only (the engine would
// also resolve names and prefixes). Terminate stops the container (its stop
// signal is SIGKILL; a SIGTERM and 3s of grace for one that says otherwise)
// and, at the same time, renames it resident-gone-…: from then on it is
// gone to every call, and terminate answers while the engine removes the
// container and its scratch volumes in the background; a start sweep
// removes one a resident left so (gone.go). A sandbox with store volumes is
// removed before terminate answers. A missing container or one already
// gone or being removed is success with existed=false.
//
// Labels never change and ids are never reused, so the provider remembers
// the labels of the sandboxes it created or inspected (known.go) and offers
// them as provider.OwnerMemory: an exec then makes the engine calls a bare
// exec makes and no more. Whether a sandbox runs is asked only when the
// engine refuses an exec; read_owner and the provider's terminate always
// ask the engine.
//
// # Errors, timeouts, credentials
//
// Engine errors are classified once (errors.go) with containerd/errdefs: not
// found, conflict, invalid argument, unauthorized/forbidden, resource
// exhausted (quota); an engine that cannot be reached is transient. An exec
// the runtime refuses to start (its text instead of the keeper's status: a
// terminate racing the exec) is explained from the sandbox's settled state,
// not_found or conflict (refusal.go). Every call is bounded by 30s as a
// whole, however many engine calls it makes (Info.CallTimeout, announced as
// limits.call_timeout_s; store read_file is bounded per engine call only);
// an exec tolerates an unreachable or silent engine for 15s (plus the one
// call in flight) before Wait returns transient; a pull with no progress for
// 2 minutes is transient, and what follows it has a fresh bound. A container
// a create made but could not start is removed in the background
// (cleanup.go). The next call after the engine is back simply works. A 401 from the engine or a
// proxy in front of it fires the unauthorized hook (registry 401s during a
// pull do not: that is a per-image problem, reported as not_found like the
// engine's "pull access denied").
//
// Registry credentials come from initialize.credentials["docker_auth_config"]
// (a Docker config JSON with "auths"); a pull sends only the entry for the
// image's registry, and reports progress as sandbox/pull_progress. Secrets()
// names the Docker and registry credential variables and the token patterns
// of registry auth material (dckr_pat_/dckr_oat_ tokens, base64 Docker
// configs and X-Registry-Auth values, "auth"/"identitytoken" JSON fields).
package docker
