package main

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// build [-f DOCKERFILE] TAG DIR: DIR as a tar context, in lexical order so
// the same directory makes the same bytes (the resident caches by them).
func cmdBuild(ctx context.Context, g *globals, stdio stdio, args []string) int {
	flags := g.flags("build", stdio)
	dockerfile := flags.String("f", "", "the Dockerfile's path inside DIR (default Dockerfile)")
	words, err := parseInterleaved(flags, args)
	if err != nil {
		return usageExit(flags, stdio, err)
	}
	if len(words) != 2 {
		return usageError(stdio, "build", fmt.Errorf("usage: residentctl build [-f DOCKERFILE] TAG DIR"))
	}
	tag, dir := words[0], words[1]
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageError(stdio, "build", fmt.Errorf("%s is not a directory", dir))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "build", err, exitFailure)
	}
	defer s.close()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarDir(pw, dir)) }()
	res, err := s.BuildImage(ctx, *dockerfile, tag, pr)
	_ = pr.Close()
	if err != nil {
		return report(stdio, g, "build "+tag, err, exitFailure)
	}
	if res.Cached {
		fmt.Fprintln(stdio.err, "residentctl: build: the same context was built before; reused", res.ImageID)
	}
	fmt.Fprintln(stdio.out, res.Image)
	return 0
}

// tarDir writes dir's regular files and directories as a tar with no
// owners or times, so only the content decides the bytes.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel) + "/", Mode: int64(info.Mode().Perm()), Typeflag: tar.TypeDir})
		case !info.Mode().IsRegular():
			return nil // sockets, devices, links: not part of a context
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: int64(info.Mode().Perm()), Size: info.Size(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
