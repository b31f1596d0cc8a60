package docker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
)

// errPullStalled ends a pull that sent no progress for timing.pullIdle: a
// hung engine or registry, not a slow download, which keeps talking.
var errPullStalled = errors.New("image pull made no progress")

// ensureImage returns the image's inspect, pulling it first when the engine
// does not have it. The first inspect runs under ctx, the call's bound; a
// pull under parent, bounded by its progress instead (timing.pullIdle
// without any ends it); what follows the pull under the fresh bound renew
// gives. A pull reports progress to the host as sandbox/pull_progress
// notifications.
func (p *Provider) ensureImage(ctx, parent context.Context, ref string, renew func() context.Context) (client.ImageInspectResult, error) {
	cctx, cancel := p.callCtx(ctx)
	img, err := p.cli.ImageInspect(cctx, ref)
	err = classify(cctx, "image inspect", err)
	cancel()
	if err == nil || protocol.KindOf(err) != protocol.KindNotFound {
		return img, err
	}
	if err := p.pull(parent, ref); err != nil {
		return img, err
	}
	cctx, cancel = p.callCtx(renew())
	defer cancel()
	img, err = p.cli.ImageInspect(cctx, ref)
	return img, classify(cctx, "image inspect after pull", err)
}

func (p *Provider) pull(ctx context.Context, ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return protocol.Errorf(protocol.KindInvalidRequest, "image %q: %v", ref, err)
	}
	p.log.Info("image pull", zap.String("image", ref))
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(p.timing.pullIdle, func() { cancel(errPullStalled) })
	defer stall.Stop()

	resp, err := p.cli.ImagePull(pctx, ref, client.ImagePullOptions{RegistryAuth: p.registryAuthFor(reference.Domain(named))})
	if err != nil {
		return pullError(pctx, ref, err)
	}
	defer resp.Close()
	progress := newPullReporter(ref, p.notify)
	for msg, err := range resp.JSONMessages(pctx) {
		if err != nil {
			return pullError(pctx, ref, err)
		}
		stall.Reset(p.timing.pullIdle)
		if msg.Error != nil {
			return pullError(pctx, ref, errors.New(msg.Error.Message))
		}
		progress.report(msg)
	}
	if context.Cause(pctx) != nil {
		return pullError(pctx, ref, pctx.Err())
	}
	p.log.Info("image pulled", zap.String("image", ref))
	return nil
}

// pullError classifies a failed pull. The engine cannot tell a missing
// image from a private one ("pull access denied ... may require 'docker
// login'"), so both are not_found, with the engine's words.
func pullError(ctx context.Context, ref string, err error) error {
	if errors.Is(context.Cause(ctx), errPullStalled) {
		return kindErr(protocol.KindTransient, errPullStalled, "image pull %s", ref)
	}
	msg := strings.ToLower(err.Error())
	switch {
	case cerrdefs.IsNotFound(err), strings.Contains(msg, "not found"), strings.Contains(msg, "manifest unknown"),
		strings.Contains(msg, "pull access denied"), strings.Contains(msg, "repository does not exist"), strings.Contains(msg, "unauthorized"):
		return kindErr(protocol.KindNotFound, err, "image %s", ref)
	case strings.Contains(msg, "invalid reference"):
		return kindErr(protocol.KindInvalidRequest, err, "image %s", ref)
	}
	return classify(ctx, "image pull "+ref, err)
}

// pullReporter turns the engine's progress stream into notifications: every
// change of a layer's status, and byte progress at most every quarter second
// per layer, so a fast pull does not flood the host.
type pullReporter struct {
	image  string
	notify func(string, any)
	last   map[string]pullState
}

type pullState struct {
	status string
	at     time.Time
}

func newPullReporter(image string, notify func(string, any)) *pullReporter {
	return &pullReporter{image: image, notify: notify, last: map[string]pullState{}}
}

func (r *pullReporter) report(msg jsonstream.Message) {
	status := strings.TrimSpace(msg.Status)
	if msg.ID != "" {
		status = msg.ID + ": " + status
	}
	if status == "" {
		return
	}
	now := time.Now()
	prev := r.last[msg.ID]
	if prev.status == msg.Status && now.Sub(prev.at) < 250*time.Millisecond {
		return
	}
	r.last[msg.ID] = pullState{status: msg.Status, at: now}
	pp := protocol.PullProgress{Image: r.image, Status: status, Phase: pullPhase(msg.Status)}
	if pp.Phase != "" {
		// Only a layer's steps name a layer: the image's own messages carry
		// its tag in the same field ("Pulling from library/alpine", id 3.20).
		pp.Layer = msg.ID
	}
	if msg.Progress != nil {
		pp.Current, pp.Total = msg.Progress.Current, msg.Progress.Total
	}
	r.notify(protocol.NotifyPullProgress, pp)
}

// pullPhase maps the engine's words for a layer's step to the protocol's
// closed set; "" for a message that is no layer's step. The words are the
// engine's (distribution/xfer), stable since Docker 1.10.
func pullPhase(status string) protocol.PullPhase {
	status = strings.TrimSpace(status)
	if strings.HasPrefix(status, "Retrying in ") {
		return protocol.PullDownloading
	}
	switch status {
	case "Pulling fs layer", "Waiting":
		return protocol.PullWaiting
	case "Downloading", "Verifying Checksum":
		return protocol.PullDownloading
	case "Download complete":
		return protocol.PullDownloaded
	case "Extracting":
		return protocol.PullExtracting
	case "Pull complete", "Already exists":
		return protocol.PullComplete
	}
	return ""
}

// jsonMessages decodes a stream of engine JSON messages.
func jsonMessages(r io.Reader) iter.Seq2[jsonstream.Message, error] {
	return func(yield func(jsonstream.Message, error) bool) {
		dec := json.NewDecoder(r)
		for {
			var m jsonstream.Message
			if err := dec.Decode(&m); err != nil {
				if !errors.Is(err, io.EOF) {
					yield(m, err)
				}
				return
			}
			if !yield(m, nil) {
				return
			}
		}
	}
}
