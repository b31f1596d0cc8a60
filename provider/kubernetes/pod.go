package kubernetes

import (
	"path"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// Container and volume names inside a sandbox pod.
const (
	containerSandbox = "sandbox"
	containerKeeper  = "keeper" // the init container that installs the keeper
	volumeKeeper     = "resident-keeper"
	volumeTmp        = "resident-tmp"
	volumeWork       = "resident-work"
	defaultWorkdir   = "/work" // the workdir of a read-only root when the spec names none
	keeperInstallDir = "/install"
)

// lifetimeSlack is how much longer than lifetime_s the cluster lets a pod
// live: the start of the pod (the keeper's install, the image) before the
// keeper's own clock starts.
const lifetimeSlack = 30

// keeperCaps are the only capabilities a sandbox container holds: the
// keeper's, which it keeps for itself and takes from every command it
// starts (its bounding set emptied, no_new_privs from
// allowPrivilegeEscalation: false), as on Docker.
var keeperCaps = []corev1.Capability{"KILL", "SETUID", "SETGID", "SETPCAP"}

// sandboxPod is the resident's own pod spec for a sandbox (no controller:
// a pod that ends stays ended, and nothing recreates one we delete).
func (p *Provider) sandboxPod(id string, spec protocol.Spec, labels map[string]string, tagKeys string, claims map[string]string) (*corev1.Pod, error) {
	resources, err := resourcesOf(spec)
	if err != nil {
		return nil, err
	}
	workdir := spec.Workdir
	if workdir == "" && spec.ReadOnlyRoot {
		workdir = defaultWorkdir
	}
	mounts := []corev1.VolumeMount{{Name: volumeKeeper, MountPath: keeperproto.Dir, ReadOnly: true}}
	volumes := []corev1.Volume{p.keeperVolume()}
	if spec.ReadOnlyRoot {
		// Scratch on the node's disk, removed with the pod.
		mounts = append(mounts, corev1.VolumeMount{Name: volumeTmp, MountPath: "/tmp"}, corev1.VolumeMount{Name: volumeWork, MountPath: path.Join("/", workdir)})
		volumes = append(volumes, corev1.Volume{Name: volumeTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			corev1.Volume{Name: volumeWork, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	for i, v := range spec.Volumes {
		name := "store-" + strconv.Itoa(i)
		target := v.Path
		if !path.IsAbs(target) {
			target = path.Join("/", workdir, target)
		}
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: path.Clean(target), ReadOnly: v.ReadOnly})
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claims[v.Name], ReadOnly: v.ReadOnly}}})
	}
	env := make([]corev1.EnvVar, 0, len(spec.Env))
	for k, v := range spec.Env {
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	slices.SortFunc(env, func(a, b corev1.EnvVar) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	command := []string{keeperproto.Path, keeperproto.CmdAlive, strconv.FormatInt(spec.LifetimeS, 10)}
	annotations := map[string]string{AnnotationTagKeys: tagKeys}
	if p.channel {
		// The keeper serves the channel on the container's stdin and stdout
		// (the attach stream), which stays open across attaches.
		command = []string{keeperproto.Path, keeperproto.CmdServe, "-stdio", "-escape-lf", "-lifetime", strconv.FormatInt(spec.LifetimeS, 10)}
		annotations[AnnotationChannel] = channelEscaped
		if spec.User != "" {
			annotations[AnnotationUser] = spec.User
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: p.namespace, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  new(false),
			EnableServiceLinks:            new(false),
			TerminationGracePeriodSeconds: new(int64(0)),
			SecurityContext:               &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			InitContainers:                p.keeperInit(),
			Containers: []corev1.Container{{
				Name:  containerSandbox,
				Image: spec.Image,
				// Never pulls "latest" on every start: a cluster with the
				// image on its nodes needs no registry.
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         command,
				Stdin:           p.channel,
				StdinOnce:       false,
				TTY:             false,
				Env:             env,
				WorkingDir:      workdir,
				VolumeMounts:    mounts,
				Resources:       resources,
				SecurityContext: &corev1.SecurityContext{
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: keeperCaps},
					AllowPrivilegeEscalation: new(false),
					Privileged:               new(false),
					ReadOnlyRootFilesystem:   new(spec.ReadOnlyRoot),
					SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
			}},
			Volumes: volumes,
		},
	}
	if spec.LifetimeS > 0 {
		// The keeper ("alive") ends the sandbox container lifetime_s after
		// it started, and the cluster itself ends the pod lifetimeSlack
		// later at most (activeDeadlineSeconds counts from the pod's start,
		// before the keeper is installed): both hold with no resident left.
		pod.Spec.ActiveDeadlineSeconds = new(spec.LifetimeS + lifetimeSlack)
	}
	return pod, nil
}

// keeperVolume is what the sandbox container mounts read-only at the
// keeper's directory: an emptyDir the init container fills from the keeper
// image, or the node's directory of this keeper (keeper_host_dir).
func (p *Provider) keeperVolume() corev1.Volume {
	if p.keeperHostDir != "" {
		// Type Directory: the kubelet checks it is there and makes nothing
		// (without a type, containerd would make an empty directory on the
		// node). A node without it retries the mount: create ends at its
		// bound, transient, "ContainerCreating".
		dir := path.Dir(KeeperHostPath(p.keeperHostDir, p.keeperDigest))
		return corev1.Volume{Name: volumeKeeper, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: new(corev1.HostPathDirectory)}}}
	}
	return corev1.Volume{Name: volumeKeeper, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(16<<20, resource.BinarySI)}}}
}

// keeperInit installs the keeper into the pod's keeper volume from the
// keeper image, so the sandbox's image needs no shell, no cp, nothing;
// none with keeper_host_dir, whose volume holds the keeper already.
func (p *Provider) keeperInit() []corev1.Container {
	if p.keeperHostDir != "" {
		return nil
	}
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	return []corev1.Container{{
		Name:            containerKeeper,
		Image:           p.keeperImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{keeperproto.Path, keeperproto.CmdInstall, keeperInstallDir},
		VolumeMounts:    []corev1.VolumeMount{{Name: volumeKeeper, MountPath: keeperInstallDir}},
		Resources:       corev1.ResourceRequirements{Requests: small, Limits: small},
		SecurityContext: &corev1.SecurityContext{
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			AllowPrivilegeEscalation: new(false),
			ReadOnlyRootFilesystem:   new(true),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}}
}

// resourcesOf: spec.cpus and spec.memory_mb as equal requests and limits
// (the pod is then Guaranteed for what it names).
func resourcesOf(spec protocol.Spec) (corev1.ResourceRequirements, error) {
	list := corev1.ResourceList{}
	if spec.CPUs < 0 || spec.MemoryMB < 0 {
		return corev1.ResourceRequirements{}, protocol.Errorf(protocol.KindInvalidRequest, "cpus and memory_mb must not be negative")
	}
	if spec.CPUs > 0 {
		list[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(1, int64(spec.CPUs*1000)), resource.DecimalSI)
	}
	if spec.MemoryMB > 0 {
		if spec.MemoryMB < 6 {
			return corev1.ResourceRequirements{}, protocol.Errorf(protocol.KindInvalidRequest, "memory_mb %d is below 6", spec.MemoryMB)
		}
		list[corev1.ResourceMemory] = *resource.NewQuantity(spec.MemoryMB<<20, resource.BinarySI)
	}
	if len(list) == 0 {
		return corev1.ResourceRequirements{}, nil
	}
	return corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}, nil
}

// validateSpec refuses what a pod cannot honour, before anything is made.
func validateSpec(spec protocol.Spec) error {
	switch {
	case spec.Image == "":
		return protocol.Errorf(protocol.KindInvalidRequest, "spec.image is required")
	case spec.LifetimeS < 0:
		return protocol.Errorf(protocol.KindInvalidRequest, "lifetime_s must not be negative")
	case spec.PidsLimit != 0:
		return protocol.Errorf(protocol.KindInvalidRequest, "pids_limit: a pod's process cap is the kubelet's podPidsLimit, not settable per sandbox")
	case spec.Network != "" && spec.Network != "none" && spec.Network != "bridge":
		return protocol.Errorf(protocol.KindInvalidRequest, "network %q: a pod has the cluster's network (\"bridge\") or none", spec.Network)
	}
	if spec.Workdir != "" && !path.IsAbs(spec.Workdir) {
		return protocol.Errorf(protocol.KindInvalidRequest, "workdir %q must be absolute", spec.Workdir)
	}
	for k := range spec.Env {
		if k == "" {
			return protocol.Errorf(protocol.KindInvalidRequest, "env: empty name")
		}
	}
	return nil
}
