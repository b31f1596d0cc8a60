package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// specFlags are run's flags for every spec field.
type specFlags struct {
	image, network, workdir, user string
	readOnly                      bool
	memoryMB, pids                int64
	cpus                          float64
	lifetime                      time.Duration
	volumes, tags                 multiFlag
}

func (f *specFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.image, "image", "", "image for the sandbox (docker; recorded, not used, by local)")
	fs.StringVar(&f.network, "network", "", "network mode (provider-defined; docker: none, bridge, ...)")
	fs.StringVar(&f.workdir, "workdir", "", "the sandbox's work directory")
	fs.StringVar(&f.user, "user", "", "user the sandbox's commands run as: NAME, UID or UID:GID (needs capabilities.exec_user)")
	fs.BoolVar(&f.readOnly, "read-only", false, "read-only root filesystem (the work directory and /tmp stay writable)")
	fs.Int64Var(&f.memoryMB, "memory", 0, "memory limit in MiB")
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU limit, e.g. 1.5")
	fs.Int64Var(&f.pids, "pids", 0, "process limit")
	fs.DurationVar(&f.lifetime, "lifetime", 0, "stop the sandbox by itself after this long, e.g. 2h (default: until removed)")
	fs.Var(&f.volumes, "v", "mount a persistent volume `VOL:PATH[:ro]` (repeatable)")
	fs.Var(&f.tags, "tag", "tag the sandbox `KEY=VALUE` (repeatable)")
}

func (f *specFlags) spec(env map[string]string) (protocol.Spec, map[string]string, error) {
	spec := protocol.Spec{Image: f.image, Env: env, Network: f.network, Workdir: f.workdir, User: f.user,
		ReadOnlyRoot: f.readOnly, MemoryMB: f.memoryMB, CPUs: f.cpus, PidsLimit: f.pids}
	if f.lifetime < 0 || f.lifetime%time.Second != 0 {
		return spec, nil, fmt.Errorf("--lifetime %s: want whole seconds, at least 0", f.lifetime)
	}
	spec.LifetimeS = int64(f.lifetime / time.Second)
	for _, v := range f.volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || (len(parts) == 3 && parts[2] != "ro") {
			return spec, nil, fmt.Errorf("-v %q: want VOL:PATH or VOL:PATH:ro", v)
		}
		spec.Volumes = append(spec.Volumes, protocol.VolumeMount{Name: parts[0], Path: parts[1], ReadOnly: len(parts) == 3})
	}
	tags := map[string]string{"residentctl": "run"}
	for _, kv := range f.tags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return spec, nil, fmt.Errorf("--tag %q: want KEY=VALUE", kv)
		}
		tags[k] = v
	}
	return spec, tags, nil
}
