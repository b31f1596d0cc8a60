// Package kubernetes is the Kubernetes provider: each sandbox is a pod in
// one namespace of a cluster, driven through the API server with client-go
// (no kubectl anywhere). The cluster is the one the usual places name:
// KUBECONFIG, ~/.kube/config, else the in-cluster service account; the
// namespace is --provider-opt namespace=..., else the kubeconfig context's,
// else "default". A bearer token in initialize.credentials
// ["kubernetes_token"] replaces the kubeconfig's credentials; a 401 from
// the API server fires the unauthorized hook (the expiry flow).
//
// What the provider's credentials need in its namespace (RBAC): pods
// create, get, list, watch, delete; pods/exec create and get (WebSocket
// exec is a GET); networkpolicies create, patch, delete;
// persistentvolumeclaims create, get, list. Nothing cluster-wide.
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
// command is "keeper alive". An init container rather than a volume: a
// ConfigMap holds at most 1 MiB and the keeper is 2.3 MB, an image volume
// needs containerd 2.1, and the keeper image is one file the operator puts
// on the nodes once per keeper version (ctr images import of the archive
// the tests write, k8stest.Cluster.ImportKeeper) or pushes to a registry
// they reach. A node without it makes create fail at once with
// invalid_request naming keeper_image.
//
// # Exec
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
