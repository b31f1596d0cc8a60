package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// cp copies into a sandbox (cp LOCAL ID:PATH) or out of one (cp ID:PATH
// LOCAL), a file or a whole directory, streamed: no size limit where the
// provider takes uploads (capabilities.upload). "-" is stdin or stdout. A
// directory lands at PATH (or LOCAL) itself; symlinks in it are skipped.
func cmdCp(ctx context.Context, g *globals, stdio stdio, args []string) int {
	fs := g.flags("cp", stdio)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return usageExit(fs, stdio, err)
	}
	const usage = "usage: residentctl cp LOCAL ID:PATH | residentctl cp ID:PATH LOCAL (LOCAL - is stdin or stdout)"
	if len(pos) != 2 {
		return usageError(stdio, "cp", errors.New(usage))
	}
	srcID, srcPath, fromSandbox := sandboxRef(pos[0])
	dstID, dstPath, toSandbox := sandboxRef(pos[1])
	if fromSandbox == toSandbox {
		return usageError(stdio, "cp", errors.New(usage))
	}
	s, err := g.connect(ctx, stdio)
	if err != nil {
		return report(stdio, g, "cp", err, exitFailure)
	}
	defer s.close()
	c := &copier{s: s, stdio: stdio, bar: newCopyProgress(stdio.err)}
	defer c.bar.done()
	if toSandbox {
		if c.id, err = s.resolveID(ctx, dstID); err == nil {
			err = c.in(ctx, pos[0], dstPath)
		}
	} else {
		if c.id, err = s.resolveID(ctx, srcID); err == nil {
			err = c.out(ctx, srcPath, pos[1])
		}
	}
	if err != nil {
		c.bar.done()
		return report(stdio, g, "cp", err, exitFailure)
	}
	return 0
}

// sandboxRef splits ID:PATH; a local path with a slash before any colon
// (./a:b, /x:y) is local.
func sandboxRef(arg string) (id, p string, ok bool) {
	id, p, ok = strings.Cut(arg, ":")
	if !ok || id == "" || p == "" || strings.Contains(id, "/") {
		return "", "", false
	}
	return id, p, true
}

type copier struct {
	s     *session
	id    string
	stdio stdio
	bar   *copyProgress
}

// in copies a local file, directory or stdin to dst in the sandbox.
func (c *copier) in(ctx context.Context, local, dst string) error {
	if local == "-" {
		return c.upload(ctx, c.stdio.in, -1, "stdin", dst, nil)
	}
	info, err := os.Stat(local)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return c.uploadFile(ctx, local, dst, info)
	}
	return filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(local, p)
		if !d.Type().IsRegular() {
			fmt.Fprintf(c.stdio.err, "residentctl: cp: %s is not a regular file; skipped\n", p)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return c.uploadFile(ctx, p, path.Join(dst, filepath.ToSlash(rel)), info)
	})
}

func (c *copier) uploadFile(ctx context.Context, local, dst string, info fs.FileInfo) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	mode := uint32(info.Mode().Perm())
	return c.upload(ctx, f, info.Size(), local, dst, &mode)
}

// upload streams r when the provider takes uploads, else sends it whole
// within max_file_bytes.
func (c *copier) upload(ctx context.Context, r io.Reader, size int64, name, dst string, mode *uint32) error {
	info := c.s.Info()
	if !info.Capabilities.Upload {
		data, err := io.ReadAll(io.LimitReader(r, info.Limits.MaxFileBytes+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > info.Limits.MaxFileBytes {
			return fmt.Errorf("%s is over the resident's %d byte limit for one file, and provider %s takes no streamed uploads: %w",
				name, info.Limits.MaxFileBytes, info.Provider.Name, client.ErrQuota)
		}
		_, err = c.s.WriteFile(ctx, protocol.WriteFileParams{SandboxID: c.id, Path: dst, Data: data, Mode: mode})
		return err
	}
	c.bar.start(name, size)
	_, err := c.s.UploadSized(ctx, c.id, dst, mode, r, size, c.bar.update)
	c.bar.finish()
	return err
}

// out copies src of the sandbox (a file or a directory) to local.
func (c *copier) out(ctx context.Context, src, local string) error {
	if local == "-" {
		_, err := c.s.ReadSandboxFile(ctx, c.id, src, c.stdio.out)
		return err
	}
	if info, err := os.Stat(local); err == nil && info.IsDir() {
		local = filepath.Join(local, path.Base(src)) // into the directory, as cp does
	}
	err := c.download(ctx, src, local)
	if reason, _ := client.ReasonOf(err); reason != protocol.ReasonIsDirectory {
		return err
	}
	return c.downloadDir(ctx, src, local)
}

func (c *copier) downloadDir(ctx context.Context, src, local string) error {
	if err := os.MkdirAll(local, 0o755); err != nil {
		return err
	}
	res, err := c.s.ListSandboxDir(ctx, protocol.SandboxListDirParams{SandboxID: c.id, Path: src, Limit: c.s.Info().Limits.MaxListDirEntries})
	if err != nil {
		return err
	}
	if res.Truncated {
		return fmt.Errorf("%s has more than %d entries, more than cp copies", src, len(res.Entries))
	}
	for _, e := range res.Entries {
		from, to := path.Join(src, e.Name), filepath.Join(local, e.Name)
		switch e.Type {
		case protocol.EntryDir:
			err = c.downloadDir(ctx, from, to)
		case protocol.EntryFile:
			err = c.download(ctx, from, to)
		default:
			fmt.Fprintf(c.stdio.err, "residentctl: cp: %s is a %s; skipped\n", from, e.Type)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// download reads one file into a temporary file beside local, renamed over
// it once whole, so an interrupted cp leaves no half file.
func (c *copier) download(ctx context.Context, src, local string) error {
	tmp, err := os.CreateTemp(filepath.Dir(local), "."+filepath.Base(local)+".residentctl-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	c.bar.start(src, -1)
	_, err = c.s.ReadSandboxFile(ctx, c.id, src, &countingWriter{w: tmp, report: c.bar.update})
	c.bar.finish()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), local)
	}
	return err
}

type countingWriter struct {
	w      io.Writer
	n      int64
	report func(int64)
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.report(c.n)
	return n, err
}
