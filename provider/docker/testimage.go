package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

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
	full := []tarEntry{tarDir("bin", 0o755), tarDir("tmp", 0o1777), tarDir("etc", 0o755), tarFile("bin/busybox", data, 0o755),
		tarFile("etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"), 0o644), tarDir("root", 0o700)}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			full = append(full, symlinkEntry("bin/"+applet, "busybox"))
		}
	}
	bare := []tarEntry{tarDir("bin", 0o755), tarFile("bin/busybox", data, 0o755)}
	busybox = "resident-test/busybox:" + tag
	noShell = "resident-test/noshell:" + tag
	for ref, entries := range map[string][]tarEntry{busybox: full, noShell: bare} {
		if err := importImage(cli, ref, tarOf(entries...)); err != nil {
			return "", "", err
		}
	}
	return busybox, noShell, nil
}

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
