package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// session is one spawned, initialized resident.
type session struct {
	*client.Client
	progress *pullProgress
	logs     io.Closer
}

// connect spawns the resident and initializes it. Its process gets its own
// process group, so a Ctrl-C reaches residentctl alone: residentctl cancels
// the request and cleans up through the resident, which is still there.
func (g *globals) connect(ctx context.Context, stdio stdio) (*session, error) {
	bin, err := g.residentPath()
	if err != nil {
		return nil, err
	}
	args := []string{"--provider", g.provider}
	if g.stateDir != "" {
		args = append(args, "--state-dir", g.stateDir)
	}
	cmd := exec.Command(bin, args...)
	setProcessGroup(cmd)
	s := &session{progress: newPullProgress(stdio.err)}
	opts := client.Options{OnPullProgress: s.progress.update, OnBuildProgress: func(p protocol.BuildProgress) { fmt.Fprintln(stdio.err, p.Line) }}
	if g.logFile != "" {
		f, err := os.OpenFile(g.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("--log-file: %w", err)
		}
		opts.Stderr, s.logs = f, f
	}
	c, err := client.Spawn(cmd, opts)
	if err != nil {
		s.closeLogs()
		return nil, err
	}
	s.Client = c
	if _, err := c.Initialize(ctx, protocol.InitializeParams{InstallID: g.installID}); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close shuts the resident down politely and reaps it. Sandboxes live on.
func (s *session) close() {
	s.progress.done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.Info() != nil {
		_ = s.Shutdown(ctx)
	}
	_ = s.Close()
	s.closeLogs()
}

func (s *session) closeLogs() {
	if s.logs != nil {
		_ = s.logs.Close()
	}
}
