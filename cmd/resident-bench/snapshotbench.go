package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
)

// snapshots: sandbox/snapshot of a sandbox with size bytes written against
// the Engine API's commit of a raw container with the same written, then
// a create from the snapshot against a raw create from the same image.
func (b *bench) snapshots() ([]row, error) {
	size := b.scale(100, 8) << 20
	n := b.scale(5, 1)
	write := []string{"sh", "-c", "head -c " + strconv.Itoa(size) + " /dev/urandom > /big"}
	src, err := b.res.createSandbox(map[string]any{"image": b.image})
	if err != nil {
		return nil, err
	}
	if err := b.res.exec(src, write...); err != nil {
		return nil, err
	}
	rawSrc, err := b.raw.runContainer(b.image, b.rawLabels(), []string{"sleep", "3600"}, nil, true)
	if err != nil {
		return nil, err
	}
	defer func() { _ = b.raw.remove(rawSrc) }()
	if _, _, err := b.raw.exec(rawSrc, write); err != nil {
		return nil, err
	}
	round := 0
	var rawImages []string
	defer func() {
		for _, img := range rawImages {
			_, _ = b.raw.want("DELETE", "/images/"+img+"?force=1", nil, 200, 404)
		}
	}()
	// Each side times its commit alone; the images are deleted after the
	// series (bench-1 is kept for the create figure), as the raw ones are.
	var names []string
	defer func() {
		for _, name := range names {
			_ = b.res.call("snapshot/delete", map[string]string{"name": name}, nil)
		}
	}()
	ours, raw, err := interleaved(n,
		func() error {
			round++
			name := "bench-" + strconv.Itoa(round)
			if round > 1 {
				names = append(names, name)
			}
			return b.res.call("sandbox/snapshot", map[string]string{"sandbox_id": src, "name": name}, nil)
		},
		func() error {
			data, err := b.raw.want("POST", "/commit?container="+rawSrc+"&repo=residentbench-commit&tag=r"+strconv.Itoa(round), map[string]any{"Labels": b.rawLabels()}, 201)
			if err != nil {
				return err
			}
			var c struct{ Id string }
			if err := json.Unmarshal(data, &c); err != nil {
				return err
			}
			rawImages = append(rawImages, c.Id)
			return nil
		})
	if err != nil {
		return nil, err
	}
	defer func() { _ = b.res.call("snapshot/delete", map[string]string{"name": "bench-1"}, nil) }()
	snap := row{figure: fmt.Sprintf("snapshot of a sandbox with %d MiB written", size>>20), ours: medP99(ours), raw: medP99(raw) + " (commit)",
		ratio: fmt.Sprintf("%.2fx raw", ratio(ours.median(), raw.median())), goal: "≤ 1.1x raw commit", verdict: verdict(ratio(ours.median(), raw.median()) <= 1.1)}

	imageID, err := b.snapshotImageID("bench-1")
	if err != nil {
		return nil, err
	}
	var made []string
	defer func() {
		for _, id := range made {
			_ = b.raw.remove(id)
		}
	}()
	fromSnap, fromRaw, err := interleaved(b.scale(10, 2),
		func() error {
			id, err := b.res.createSandbox(map[string]any{"image": "snapshot:bench-1"})
			made = append(made, id)
			return err
		},
		func() error {
			id, err := b.rawRunImage(imageID)
			made = append(made, id)
			return err
		})
	if err != nil {
		return nil, err
	}
	create := row{figure: "create from a snapshot, pool miss", ours: medP99(fromSnap), raw: medP99(fromRaw) + " (create+start)",
		ratio: fmt.Sprintf("%.2fx raw", ratio(fromSnap.median(), fromRaw.median())), goal: "≤ 1.05x raw", verdict: verdict(ratio(fromSnap.median(), fromRaw.median()) <= 1.05)}
	return []row{snap, create}, nil
}

// snapshotImageID finds the bench install's snapshot image by its labels.
func (b *bench) snapshotImageID(name string) (string, error) {
	f, _ := json.Marshal(map[string][]string{"label": {"dev.resident.snapshot-name=" + name, ownerKey + "=" + b.installID}})
	data, err := b.raw.want("GET", "/images/json?filters="+url.QueryEscape(string(f)), nil, 200)
	if err != nil {
		return "", err
	}
	var list []struct{ Id string }
	if err := json.Unmarshal(data, &list); err != nil || len(list) != 1 {
		return "", fmt.Errorf("snapshot %s: %d images (%v)", name, len(list), err)
	}
	return list[0].Id, nil
}

// rawRunImage creates and starts a container of image with the same
// NetworkMode the resident gives sandboxes, replacing the entrypoint the
// commit kept (the resident's keeper, which lives on a volume).
func (b *bench) rawRunImage(image string) (string, error) {
	body := map[string]any{"Image": image, "Entrypoint": []string{"sleep"}, "Cmd": []string{"3600"}, "Labels": b.rawLabels(),
		"HostConfig": map[string]any{"NetworkMode": "none"}}
	data, err := b.raw.want("POST", "/containers/create", body, 201)
	if err != nil {
		return "", err
	}
	var created struct{ Id string }
	if err := json.Unmarshal(data, &created); err != nil {
		return "", err
	}
	_, err = b.raw.want("POST", "/containers/"+created.Id+"/start", nil, 204)
	return created.Id, err
}
