package dockertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// managedLabel marks what the Docker provider makes (docker.LabelManaged;
// not imported, so that the provider's own tests can use this package).
const managedLabel = "dev.resident.managed=true"

// RemoveNewAtCleanup removes, when t ends, every sandbox and volume the
// engine did not have when it was called and that owned says is the
// test's (by its labels): a session names its volumes ("data", "mine") and
// a failed one leaves its sandboxes, on an engine that outlives the test,
// and the provider's final sweep (and the next run) must find nothing they
// did not have before. Only the test's own: other packages run at the same
// time on the same engine, and a cleanup that took everything new once
// removed another package's volume in the middle of its script.
func RemoveNewAtCleanup(t testing.TB, cli *client.Client, owned func(labels map[string]string) bool) {
	t.Helper()
	before, err := volumeLabels(cli)
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	sandboxes, err := sandboxLabels(cli)
	if err != nil {
		t.Fatalf("list sandboxes: %v", err)
	}
	t.Cleanup(func() {
		now, err := sandboxLabels(cli)
		if err != nil {
			t.Errorf("list sandboxes: %v", err)
		}
		for id, labels := range now {
			if _, old := sandboxes[id]; !old && owned(labels) {
				if err := removeSandbox(cli, id); err != nil {
					t.Errorf("remove sandbox %s: %v", id, err)
				}
			}
		}
		after, err := volumeLabels(cli)
		if err != nil {
			t.Errorf("list volumes: %v", err)
			return
		}
		for name, labels := range after {
			if _, old := before[name]; !old && owned(labels) {
				removeVolume(t, cli, name)
			}
		}
	})
}

// OwnerIn is an owned for RemoveNewAtCleanup: labels with an owner tag (a
// key ending in "-install-id", in any case, as a session's tag_prefix
// makes it) whose install id match accepts.
func OwnerIn(match func(installID string) bool) func(map[string]string) bool {
	return func(labels map[string]string) bool {
		for k, v := range labels {
			if strings.HasSuffix(strings.ToLower(k), "-install-id") && match(v) {
				return true
			}
		}
		return false
	}
}

// removeSandbox removes a sandbox, or waits for the removal already under
// way: a Docker terminate answers before the engine has finished removing
// (the provider removes behind it), and the engine refuses a second
// removal of the same container with a conflict until the first is done.
func removeSandbox(cli *client.Client, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
		switch {
		case err == nil || errdefs.IsNotFound(err):
			return nil
		case !errdefs.IsConflict(err) || ctx.Err() != nil:
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func sandboxLabels(cli *client.Client) (map[string]map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", managedLabel)})
	if err != nil {
		return nil, err
	}
	ids := map[string]map[string]string{}
	for _, c := range list.Items {
		ids[c.ID] = c.Labels
	}
	return ids, nil
}

func volumeLabels(cli *client.Client) (map[string]map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		return nil, err
	}
	names := map[string]map[string]string{}
	for _, v := range list.Items {
		names[v.Name] = v.Labels
	}
	return names, nil
}

// removeVolume retries while a sandbox that mounts it is still going away.
func removeVolume(t testing.TB, cli *client.Client, name string) {
	var err error
	for range 40 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{Force: true})
		cancel()
		if err == nil || errdefs.IsNotFound(err) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Errorf("remove volume %s: %v", name, err)
}
