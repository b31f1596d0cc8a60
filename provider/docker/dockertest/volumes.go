package dockertest

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// managedLabel marks what the Docker provider makes (docker.LabelManaged;
// not imported, so that the provider's own tests can use this package).
const managedLabel = "dev.resident.managed=true"

// RemoveNewAtCleanup removes, when t ends, every sandbox and volume the
// engine did not have when it was called: a session names its volumes
// ("data", "mine") and a failed one leaves its sandboxes, on an engine that
// outlives the test, and the provider's final sweep (and the next run) must
// find nothing they did not have before.
func RemoveNewAtCleanup(t testing.TB, cli *client.Client) {
	t.Helper()
	before, err := volumeNames(cli)
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	sandboxes, err := sandboxIDs(cli)
	if err != nil {
		t.Fatalf("list sandboxes: %v", err)
	}
	t.Cleanup(func() {
		now, err := sandboxIDs(cli)
		if err != nil {
			t.Errorf("list sandboxes: %v", err)
		}
		for id := range now {
			if !sandboxes[id] {
				if err := removeSandbox(cli, id); err != nil {
					t.Errorf("remove sandbox %s: %v", id, err)
				}
			}
		}
		after, err := volumeNames(cli)
		if err != nil {
			t.Errorf("list volumes: %v", err)
			return
		}
		for name := range after {
			if !before[name] {
				removeVolume(t, cli, name)
			}
		}
	})
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

func sandboxIDs(cli *client.Client) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", managedLabel)})
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, c := range list.Items {
		ids[c.ID] = true
	}
	return ids, nil
}

func volumeNames(cli *client.Client) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cli.VolumeList(ctx, client.VolumeListOptions{})
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, v := range list.Items {
		names[v.Name] = true
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
