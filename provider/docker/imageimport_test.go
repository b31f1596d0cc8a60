package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/client"
)

// importImage and symlinkEntry build the pull test's own image; the shared
// test images come from package dockertest.
func importImage(cli *client.Client, ref string, layer []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return nil
	}
	resp, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(layer), SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: []string{"ENV PATH=/bin"}})
	if err != nil {
		return fmt.Errorf("import %s: %w", ref, err)
	}
	defer resp.Close()
	return jsonStreamError(resp)
}

func symlinkEntry(name, target string) tarEntry {
	return func(tw *tar.Writer) error {
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777})
	}
}
