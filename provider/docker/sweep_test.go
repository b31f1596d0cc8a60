package docker

import (
	"context"
	"slices"
	"time"

	"github.com/moby/moby/client"
)

// resources are the engine objects a test run could leave behind: managed
// containers and volumes (not the keeper volume, a per-engine cache), plus
// anything labelled with resident-test-run.
type resources struct {
	containers, volumes []string
}

func snapshot(cli *client.Client) (resources, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var r resources
	for _, f := range []client.Filters{client.Filters{}.Add("label", LabelManaged+"=true"), client.Filters{}.Add("label", "resident-test-run")} {
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			return r, err
		}
		for _, c := range cs.Items {
			r.containers = append(r.containers, c.ID[:12]+" "+c.Labels[LabelRole])
		}
		vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
		if err != nil {
			return r, err
		}
		for _, v := range vs.Items {
			if v.Labels[LabelRole] != RoleKeeper {
				r.volumes = append(r.volumes, v.Name)
			}
		}
	}
	return r, nil
}

// leftovers is what exists now and did not before the run. Store helpers
// remove themselves a moment after they exit, so it waits for those.
func leftovers(cli *client.Client, before resources) ([]string, error) {
	var left []string
	for range 50 {
		now, err := snapshot(cli)
		if err != nil {
			return nil, err
		}
		left = left[:0]
		for _, c := range now.containers {
			if !slices.Contains(before.containers, c) {
				left = append(left, "container "+c)
			}
		}
		for _, v := range now.volumes {
			if !slices.Contains(before.volumes, v) {
				left = append(left, "volume "+v)
			}
		}
		if len(left) == 0 {
			return nil, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left, nil
}
