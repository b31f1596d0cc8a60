// Package kubernetes is the Kubernetes provider: each sandbox is a pod in
// one namespace of a cluster, driven through the API server with client-go's
// REST layer (no kubectl anywhere): a client of its own over a scheme of
// the groups it uses, core/v1 and networking/v1 (client.go), not client-go's
// clientset, whose scheme of every API group would cost every resident its
// package initialisation and some 10 MB of idle RSS. The cluster is the
// one the usual places name: KUBECONFIG, ~/.kube/config, else the
// in-cluster service account; the namespace is --provider-opt
// namespace=..., else the kubeconfig context's, else "default". A bearer
// token in initialize.credentials["kubernetes_token"] replaces the
// kubeconfig's credentials; a 401 from the API server fires the
// unauthorized hook (the expiry flow).
//
// What the provider's credentials need in its namespace (RBAC): pods
// create, get, list, watch, delete;
// pods/exec and pods/attach create and get (WebSocket streams are a GET);
// networkpolicies create, patch, delete; persistentvolumeclaims create,
// get, list. Nothing cluster-wide.
//
// # The sandbox pod, hardened by default
//
// The resident's own pod spec (no Deployment, restartPolicy Never: nothing
// recreates a pod it deletes):
//
//	capabilities       drop ALL, then only KILL, SETUID, SETGID, SETPCAP     fixed
//	                   for the keeper, which takes them from every command
//	                   it starts (as on Docker)
//	privilege          allowPrivilegeEscalation false, never privileged     fixed
//	seccomp            RuntimeDefault                                       fixed
//	service account    automountServiceAccountToken false,                  fixed
//	                   enableServiceLinks false
//	cpu, memory        none; requests = limits when set                     spec.cpus, spec.memory_mb
//	root filesystem    writable                                             spec.read_only_root: /tmp and
//	                                                                        the workdir (/work if none
//	                                                                        named) are emptyDirs
//	lifetime           until terminated                                     spec.lifetime_s: the keeper
//	                                                                        ends the container then, and
//	                                                                        activeDeadlineSeconds (30 s
//	                                                                        later) the pod, resident or not
//	network            none: a NetworkPolicy denying all ingress and        spec.network "bridge": the
//	                   egress, made before the pod and owned by it          cluster's pod network
//	processes          the kubelet's podPidsLimit                           spec.pids_limit is refused
//	image pull         IfNotPresent (a node's image needs no registry)      spec.image
//
// A policy is only as good as the cluster's network plugin: the provider
// announces network_control from --provider-opt network_policy_enforced
// (default true; set it false on a plugin without NetworkPolicy). The test
// cluster runs kube-network-policies where the kernel can (see
// .ci/k8s-cluster) and says whether it does.
//
// # The keeper, delivered without a registry
//
// Images need no shell: an init container runs the keeper image
// (resident-keeper:<digest prefix>, --provider-opt keeper_image to name
// another) as "keeper install", copying the keeper into an emptyDir that
// the sandbox container mounts read-only at /.resident; the container's
// command is "keeper serve -stdio" (see The keeper channel; "keeper alive"
// with --provider-opt exec=exec, the fallback). An init container rather than a volume: a
// ConfigMap holds at most 1 MiB and the keeper is 2.3 MB, an image volume
// needs containerd 2.1, and the keeper image is one file the operator puts
// on the nodes once per keeper version (ctr images import of the archive
// the tests write, k8stest.Cluster.ImportKeeper) or pushes to a registry
// they reach. A node without it makes create fail at once with
// invalid_request naming keeper_image.
//
// The init container costs a create a container start and a kubelet relist
// (PLEG, every second) before the sandbox container can start: most of the
// gap to a plain pod (docs/performance.md). --provider-opt
// keeper_host_dir=DIR removes it: each node holds the keeper at
// DIR/<digest prefix>/keeper (KeeperHostPath; the operator puts it there
// once per keeper version, as they would load the image), and the pod
// mounts that directory read-only (hostPath, type Directory) at
// /.resident. Opt-in, because Pod Security's baseline and restricted levels
// refuse hostPath volumes; a node without the directory keeps the pod in
// ContainerCreating, and create ends at its bound, transient.
//
// Create returns once the keeper's channel is open: the watch of the pod
// says when the sandbox container is being started (the keeper installed,
// or, with keeper_host_dir, the pod's sandbox ready), and the provider
// attaches from then on, a few tens of ms apart, until the keeper's
// Welcome; the kubelet serves an attach as soon as the runtime runs the
// container, before its status says so at the next relist. The first exec
// finds the channel held.
//
// # The keeper channel
//
// By default (--provider-opt exec=channel) the keeper is the sandbox
// container's PID 1 as "keeper serve -stdio -lifetime S", with stdin open
// (stdin: true, stdinOnce: false, tty: false), and the provider holds one
// keeper channel (docs/keeper-channel.md) per pod over the pod's attach
// subresource: client-go's attach executor, WebSocket first, SPDY as the
// fallback, its stdin and stdout one byte stream. Every exec (stdin,
// kill, deadline, users, terminals with resize, exclusive), detached exec
// (provider.Detacher) and sandbox file operation (write_file, upload,
// sandbox/read_file, sandbox/list_dir, done by the keeper's helpers as
// spec.user, else root without capabilities) is a stream on it: an exec
// costs one message, no API server request. An exec sees the container's
// environment (the keeper tells its own, as it started, in its Welcome)
// with its own laid over it, and starts in the container's working
// directory unless it names a cwd.
//
// The channel is opened on a pod's first call and held; a broken stream
// (the API server restarted, a proxy dropped it) fails the execs on it
// transient, and the next call reconnects. Opening takes the keeper over
// (its generation fence): a new resident's first call fences the old
// holder, whose non-detached execs the keeper kills; a holder that dies
// silently loses them at the end of its lease (6 s), since the container's
// stdin never ends. A pod's annotation dev.resident.channel says it serves
// the channel; one without it (made with exec=exec, or by an older
// resident) is reached through the exec subresource as below, without
// terminals, users, detached execs or sandbox files.
//
// The channel is sealed. The container runtime writes the container's
// stdout, the keeper's side of the channel, to the node's pod log
// (kubectl logs, /var/log/pods), and every attacher of the pod reads it
// too; its stdin is recorded nowhere. So each open sends a fresh random
// key in the Hello, on stdin, and the keeper writes every frame for that
// holder sealed with it (AES-256-GCM, counter nonces, a new key per open
// or takeover: keeperproto/seal.go): the pod log holds ciphertext, and a
// frame that does not authenticate (tampered, replayed, plaintext) is
// dropped, never delivered. A keeper that answers in plaintext is refused.
// Pods annotated "stdio" (an older resident's opt-in channel, whose keeper
// does not seal) are reached unsealed, as before; this resident's pods say
// "sealed-escaped": their keeper also writes no newline byte (ESC N for a
// newline, ESC E for ESC; keeperproto.LFEncoder), because the runtime
// parses, timestamps and writes every line of that stdout on its own, and
// ciphertext has a newline every 256 bytes: without them containerd spends
// a third of the CPU on the log, and a forward's 64 MB GET went from 35 to
// 60 MB/s. The attach is SPDY first (the API server proxies it as it is),
// WebSocket where SPDY cannot upgrade. Pods of the resident before ("sealed")
// are reached as they were made.
//
// # Port forwards and egress
//
// sandbox/forward_port and spec.egress (capabilities port_forward and
// egress) go through the pod's keeper, never through the pod network: no
// Service, no port-forward subresource, no route from the resident to the
// pods. The resident listens on its own loopback (a forward) or dials the
// hosts the rules allow itself (egress), and each connection is a
// connection stream of the pod's keeper channel (net.go: keeperexec.Dial,
// keeperexec.AttachProxy), carried over the attach stream with its own
// credit each way: no API server request and no process per connection.
// Every container of a pod shares its network namespace, so the keeper
// reaches what an exec listens on at 127.0.0.1, and the egress proxy (one
// exec of "keeper proxy", on 127.0.0.1:3128, announced in HTTP_PROXY,
// HTTPS_PROXY and NO_PROXY by the resident) holds its clients on an
// abstract socket of that namespace. With exec=exec, or a pod without the
// channel, DialSandbox and AttachProxy answer provider.ErrNoDial and each
// connection is one exec of the keeper's relay or attach through the exec
// subresource. spec.egress makes the pod's network none: its deny-all
// NetworkPolicy stays, so nothing in it reaches anything but through the
// proxy. That holds only where the plugin enforces policies, so egress is
// announced with network_policy_enforced (network_control) and
// port_forward always (a forward touches only the pod's own loopback).
//
// # Exec (exec=exec)
//
// Through the exec subresource with client-go's executor, WebSocket first
// (the v5 protocol), SPDY where the server or a proxy cannot upgrade. The
// command runs under "keeper run -relay -env-stdin": the environment goes
// as frames on the exec's stdin (never on a command line: audit logs record
// an exec's command), then the control frames (stdin data, EOF, kill).
// stdout and stderr stream apart; the exit code is the status channel's.
// The keeper relays the child's output and ends after it (a background
// child holding stdout open delays the end by at most 300 ms of silence, 5
// s in all), because a Kubernetes exec ends only when every writer of its
// output closed. Kill: the kill frame; 1 s later "keeper kill" from a
// second exec; the keeper also kills the tree at the exec's deadline and
// when its control stream ends. Exclusive and OOM work as on Docker.
// An exec's stream that breaks (the API server restarted, the node went
// away) ends transient; the next call works once the server is back.
// A WebSocket exec whose keeper has not said "starting" within 10 s is
// dropped and retried once over SPDY: under load (20 execs at once on the
// test node, load average 20) the API server's WebSocket-to-SPDY
// translation was seen to stall before the command existed, in about half
// the runs; SPDY, proxied as is, did not in five. Nothing runs twice: no
// status line means no command yet, and a keeper that starts late finds its
// control stream closed and kills what it started.
//
// # Ownership, files, the store
//
// Host tags are pod labels (so they must be valid labels: a key of at most
// 63 characters with an optional DNS prefix, a value of at most 63 of
// A-Za-z0-9-_.), the owner tag merged last, our bookkeeping under
// "dev.resident."; list_owned is an exact label selector, checked again.
// Sandbox ids are pod names, "resident-" and 20 random hex digits. A pod
// being deleted is gone: not listed, not found. terminate deletes with a
// 1 s grace period (the keeper ignores SIGTERM) and a resource-version
// precondition, so of concurrent terminates exactly one reports existed.
// write_file runs "keeper put" as the container's user. The store is
// PersistentVolumeClaims labelled with the owner tag (volumes.go); list_dir
// and read_file run a short-lived reader pod per call (store.go).
//
// # Errors and bounds
//
// API server errors are mapped in one place (errors.go): NotFound,
// Conflict/AlreadyExists, Unauthorized and Forbidden (both unauthorized,
// the message tells them apart), a quota rejection as quota, an
// unreachable or busy server as transient. Every call is bounded by 30 s
// (limits.call_timeout_s). create waits at most 120 s for the pod to run: an
// image no node has and none can pull is not_found at once
// (ErrImagePull/ImagePullBackOff), a pod no node has room for is quota when
// the bound passes, anything else transient; what the create made is
// deleted.
package kubernetes
