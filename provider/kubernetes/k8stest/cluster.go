package k8stest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperbin"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// Cluster is the test cluster .ci/k8s-cluster brought up, as its `env`
// describes it.
type Cluster struct {
	Kubeconfig string
	Image      string // a busybox image on the node
	Containerd string // the node's containerd socket, for image imports
	// PoliciesEnforced: a network plugin enforces NetworkPolicy there.
	PoliciesEnforced bool
}

// FromEnv reads the cluster from the environment `.ci/k8s-cluster env`
// prints, or says why there is none.
func FromEnv() (Cluster, error) {
	c := Cluster{
		Kubeconfig: os.Getenv("KUBECONFIG"), Image: os.Getenv("RESIDENT_K8S_TEST_IMAGE"),
		Containerd: os.Getenv("RESIDENT_K8S_CONTAINERD"), PoliciesEnforced: os.Getenv("RESIDENT_K8S_POLICIES") == "enforced",
	}
	if c.Kubeconfig == "" || c.Image == "" || c.Containerd == "" {
		return c, fmt.Errorf("no test cluster: run .ci/k8s-cluster start and eval \"$(.ci/k8s-cluster env)\"")
	}
	return c, nil
}

// Required is true under CI=true, where a missing cluster is a failure.
func Required() bool { return os.Getenv("CI") == "true" }

// ImportKeeper loads the keeper image (named by name, for the current
// keeper) onto the node: what an operator does once per keeper version
// on a cluster with no registry.
func (c Cluster) ImportKeeper(ctx context.Context, name string) error {
	bin, err := keeperbin.For("amd64")
	if err != nil {
		return err
	}
	archive, err := Archive(name, []File{
		{Path: keeperproto.Dir, Dir: true, Mode: 0o555},
		{Path: keeperproto.Path, Data: bin.Data, Mode: 0o555},
	}, []string{keeperproto.Path})
	if err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if ok && time.Until(deadline) <= 0 {
		return ctx.Err()
	}
	return Import(c.Containerd, archive)
}

// InstallKeeperOnNode puts the keeper where --provider-opt
// keeper_host_dir=dir has a node look for it (dir/<digest prefix>/keeper,
// see kubernetes.KeeperHostPath): the test node is this machine.
func (c Cluster) InstallKeeperOnNode(dir string) error {
	bin, err := keeperbin.For("amd64")
	if err != nil {
		return err
	}
	sub := filepath.Join(dir, bin.Digest[:16])
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(sub, ".keeper.tmp")
	if err := os.WriteFile(tmp, bin.Data, 0o555); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(sub, "keeper"))
}
