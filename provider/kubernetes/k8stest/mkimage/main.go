// Command mkimage writes the test cluster's images as docker-archive
// tarballs (no registry is reachable): "pause" (the pod sandbox) from a
// static binary, and "busybox" from a static busybox with a link for every
// applet. .ci/k8s-cluster imports them into containerd.
//
//	mkimage -o pause.tar -ref localhost/pause:3.10 -pause ./pause
//	mkimage -o busybox.tar -ref localhost/busybox:1.35 -busybox /bin/busybox
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/resident-dev/resident/provider/kubernetes/k8stest"
)

func main() {
	out := flag.String("o", "", "output archive")
	ref := flag.String("ref", "", "image reference")
	pause := flag.String("pause", "", "the pause binary: a pause image")
	busybox := flag.String("busybox", "", "a static busybox: a busybox image")
	flag.Parse()
	if err := run(*out, *ref, *pause, *busybox); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(out, ref, pause, busybox string) error {
	var files []k8stest.File
	var cmd []string
	switch {
	case pause != "":
		data, err := os.ReadFile(pause)
		if err != nil {
			return err
		}
		files, cmd = []k8stest.File{{Path: "pause", Data: data, Mode: 0o755}}, []string{"/pause"}
	case busybox != "":
		var err error
		if files, err = busyboxFiles(busybox); err != nil {
			return err
		}
		cmd = []string{"sh"}
	default:
		return fmt.Errorf("one of -pause and -busybox is required")
	}
	archive, err := k8stest.Archive(ref, files, cmd)
	if err != nil {
		return err
	}
	return os.WriteFile(out, archive, 0o644)
}

func busyboxFiles(bin string) ([]k8stest.File, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	list, err := exec.Command(bin, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	files := []k8stest.File{
		{Path: "bin", Dir: true, Mode: 0o755}, {Path: "etc", Dir: true, Mode: 0o755},
		{Path: "tmp", Dir: true, Mode: 0o1777}, {Path: "root", Dir: true, Mode: 0o700},
		{Path: "proc", Dir: true, Mode: 0o555}, {Path: "sys", Dir: true, Mode: 0o555}, {Path: "dev", Dir: true, Mode: 0o755},
		{Path: "bin/busybox", Data: data, Mode: 0o755},
		{Path: "etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"), Mode: 0o644},
		{Path: "etc/group", Data: []byte("root:x:0:\nnobody:x:65534:\n"), Mode: 0o644},
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			files = append(files, k8stest.File{Path: "bin/" + applet, Link: "busybox", Mode: 0o777})
		}
	}
	return files, nil
}
