package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// DefaultBusybox is where Debian's busybox-static puts its binary.
const DefaultBusybox = "/usr/bin/busybox"

// ImportBusybox makes two images from nothing, for machines that reach no
// registry (tests, benchmarks, the demo): busybox with every applet linked,
// and one holding only the busybox binary, with no shell to run. bin must be
// a static busybox. An image already present is reused; names carry a hash
// of the binary.
func ImportBusybox(cli *client.Client, bin string) (busybox, noShell string, err error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", "", fmt.Errorf("need a static busybox at %s (apt-get install busybox-static): %w", bin, err)
	}
	list, err := exec.Command(bin, "--list").Output()
	if err != nil {
		return "", "", fmt.Errorf("busybox --list: %w", err)
	}
	sum := sha256.Sum256(data)
	tag := hex.EncodeToString(sum[:6])
	full := []entry{dir("bin", 0o755), dir("tmp", 0o1777), dir("etc", 0o755), file("bin/busybox", data, 0o755),
		file("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"), 0o644), dir("root", 0o700)}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			full = append(full, entry{hdr: &tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}})
		}
	}
	bare := []entry{dir("bin", 0o755), file("bin/busybox", data, 0o755)}
	busybox = "resident-test/busybox:" + tag
	noShell = "resident-test/noshell:" + tag
	for ref, entries := range map[string][]entry{busybox: full, noShell: bare} {
		if err := ImportImage(cli, ref, tarOf(entries)); err != nil {
			return "", "", err
		}
	}
	return busybox, noShell, nil
}

var (
	imagesOnce            sync.Once
	busyboxImage, noShell string
	imagesErr             error
)

// Images are ImportBusybox's two images of DefaultBusybox on the engine at
// DOCKER_HOST, made once per test binary.
func Images(cli *client.Client) (busybox, noShellImage string, err error) {
	imagesOnce.Do(func() { busyboxImage, noShell, imagesErr = ImportBusybox(cli, DefaultBusybox) })
	return busyboxImage, noShell, imagesErr
}

// entry is one member of an image layer: a header, and a regular file's
// content.
type entry struct {
	hdr  *tar.Header
	data []byte
}

func dir(name string, mode int64) entry {
	return entry{hdr: &tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: mode}}
}

func file(name string, data []byte, mode int64) entry {
	return entry{hdr: &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data))}, data: data}
}

// tarOf builds a layer in memory; writing to a bytes.Buffer cannot fail.
func tarOf(entries []entry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		_ = tw.WriteHeader(e.hdr)
		_, _ = tw.Write(e.data)
	}
	_ = tw.Close()
	return buf.Bytes()
}

// ImportImage makes image ref from one tar layer, with PATH=/bin, unless
// the engine already has it.
func ImportImage(cli *client.Client, ref string, layer []byte) error {
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
	return streamError(resp)
}

// streamError drains the engine's JSON message stream and returns the first
// error in it.
func streamError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var msg jsonstream.Message
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("image import stream: %w", err)
		}
		if msg.Error != nil {
			return errors.New(msg.Error.Message)
		}
	}
}
