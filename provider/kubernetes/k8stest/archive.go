// Package k8stest holds what the Kubernetes provider's tests and the test
// cluster (.ci/k8s-cluster) share: image archives written without a
// registry or a Docker engine, and importing them into the cluster's
// containerd.
package k8stest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
)

// File is one entry of an image's single layer: a regular file (Data), a
// directory (Dir) or a symlink (Link).
type File struct {
	Path string
	Data []byte
	Mode int64
	Dir  bool
	Link string
}

// Archive writes a one-layer image named ref in the docker-archive format
// ("docker save"), which containerd imports: files as the layer, cmd as its
// command. Timestamps are zero, so the same files give the same image id.
func Archive(ref string, files []File, cmd []string) ([]byte, error) {
	layer, err := tarOf(files)
	if err != nil {
		return nil, err
	}
	diffID := sha256.Sum256(layer)
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
		"config": map[string]any{"Cmd": cmd, "Env": []string{"PATH=/bin:/usr/bin:/sbin:/usr/sbin"}, "WorkingDir": "/"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
	})
	if err != nil {
		return nil, err
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := hex.EncodeToString(diffID[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{"Config": configName, "RepoTags": []string{ref}, "Layers": []string{layerName}}})
	if err != nil {
		return nil, err
	}
	return tarOf([]File{
		{Path: configName, Data: config, Mode: 0o644},
		{Path: path.Dir(layerName), Dir: true, Mode: 0o755},
		{Path: layerName, Data: layer, Mode: 0o644},
		{Path: "manifest.json", Data: manifest, Mode: 0o644},
	})
}

func tarOf(files []File) ([]byte, error) {
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Mode: f.Mode, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case f.Link != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Import loads an archive into the k8s.io namespace of the containerd
// listening on socket, where the kubelet finds it without a registry.
func Import(socket string, archive []byte) error {
	f, err := os.CreateTemp("", "resident-image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(archive); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	out, err := exec.Command("ctr", "-a", socket, "-n", "k8s.io", "images", "import", f.Name()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import: %w: %s", err, out)
	}
	return nil
}
