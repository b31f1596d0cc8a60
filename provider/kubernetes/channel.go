package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Exec modes (--provider-opt exec=...): how a sandbox's keeper is reached.
const (
	// modeChannel: the sandbox container's command is "keeper serve
	// -stdio" (PID 1, stdin open, no terminal), and the provider holds one
	// keeper channel per pod over the attach subresource; every exec, file
	// operation and detached exec is a stream on it.
	modeChannel = "channel"
	// modeExec: the container's command is "keeper alive", and each exec
	// is one exec subresource stream running "keeper run -relay".
	modeExec = "exec"
)

// AnnotationChannel marks a pod whose keeper serves the channel on its
// attach stream (modeChannel); a pod without it is reached through the
// exec subresource whatever this resident's mode. Its value says how:
// channelEscaped (this resident's pods: the keeper seals what it writes,
// so the pod log holds ciphertext, and writes no newline byte, so the
// runtime logs it as one long line: keeperproto.LFEncoder), channelSealed
// (an earlier resident's pods: sealed, newlines as they come) or
// channelStdio (opt-in channel pods of an older one, whose keeper does not
// seal). Each is reached as it was made. A resident older than a value
// reaches the pod through the exec subresource.
const AnnotationChannel = "dev.resident.channel"

const (
	channelEscaped = "sealed-escaped"
	channelSealed  = "sealed"
	channelStdio   = "stdio"
)

// AnnotationUser is spec.user, the default user of every exec and file
// operation of a channel pod (the keeper itself stays root).
const AnnotationUser = "dev.resident.user"

// holder is this resident's hold on one pod's keeper: what it learnt of
// the pod once (its mode, working directory and user) and the channel,
// reopened on the next call after a break.
type holder struct {
	mu      sync.Mutex
	known   bool              // mode, workdir and user were read from the pod
	channel bool              // the pod serves the channel
	sealed  bool              // its keeper seals: every open asks for it, and refuses plaintext
	escaped bool              // its keeper writes no newline (keeperproto.LFEncoder): reads decode
	labels  map[string]string // the pod's, as read with the mode (KnownOwner)
	workdir string
	user    string
	conn    *channel.Conn
	rw      *attachStream // conn's transport
	gone    bool          // terminated by this resident
}

func (p *Provider) holderOf(id string) *holder {
	p.holdersMu.Lock()
	defer p.holdersMu.Unlock()
	if p.holders == nil {
		p.holders = map[string]*holder{}
	}
	h := p.holders[id]
	if h == nil {
		h = &holder{}
		p.holders[id] = h
	}
	return h
}

// learnPod records what a pod this resident created says of its keeper,
// so the first exec needs no read of the pod.
func (p *Provider) learnPod(pod *corev1.Pod) {
	h := p.holderOf(pod.Name)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.known = true
	h.setMode(pod)
}

// setMode records what pod says of its keeper.
func (h *holder) setMode(pod *corev1.Pod) {
	h.workdir = ""
	for _, c := range pod.Spec.Containers {
		if c.Name == containerSandbox {
			h.workdir = c.WorkingDir
		}
	}
	mode := pod.Annotations[AnnotationChannel]
	h.channel = mode == channelEscaped || mode == channelSealed || mode == channelStdio
	h.sealed = mode == channelEscaped || mode == channelSealed
	h.escaped = mode == channelEscaped
	h.user = pod.Annotations[AnnotationUser]
	h.labels = maps.Clone(pod.Labels)
}

// KnownOwner answers as ReadOwner would, from memory and without asking
// the API server, for a sandbox this provider created or has reached:
// the resident's ownership check before an exec then costs no request.
// The provider never changes a pod's labels; whoever could (pods patch in
// the namespace) could exec in the pod as well. Whether the pod still
// exists is not answered (an exec in a deleted one fails not_found).
func (p *Provider) KnownOwner(sandboxID, ownerKey string) (string, bool) {
	p.holdersMu.Lock()
	h := p.holders[sandboxID]
	p.holdersMu.Unlock()
	if h == nil {
		return "", false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.known || h.gone || h.labels == nil {
		return "", false
	}
	return provider.OwnerOf(h.labels, ownerKey), true
}

// holdChannel keeps a channel create opened (earlyOpen) as the pod's, for
// its first call; a channel held already (a call raced the create's end)
// wins, and this one is closed.
func (p *Provider) holdChannel(id string, conn *channel.Conn, rw *attachStream) {
	h := p.holderOf(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn != nil || h.gone {
		_ = conn.Close()
		return
	}
	h.conn, h.rw = conn, rw
}

// dropHolder closes the pod's channel and forgets the pod (terminate).
func (p *Provider) dropHolder(id string) {
	p.holdersMu.Lock()
	h := p.holders[id]
	delete(p.holders, id)
	p.holdersMu.Unlock()
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gone = true
	if h.conn != nil {
		_ = h.conn.Close()
		h.conn = nil
	}
}

// closeHolders lets go of every channel (Close): the keepers kill the
// non-detached execs they started, as when a resident dies.
func (p *Provider) closeHolders() {
	p.holdersMu.Lock()
	hs := p.holders
	p.holders = nil
	p.holdersMu.Unlock()
	for _, h := range hs {
		h.mu.Lock()
		if h.conn != nil {
			_ = h.conn.Close()
			h.conn = nil
		}
		h.mu.Unlock()
	}
}

// podChannel is what a call on a channel pod works with.
type podChannel struct {
	conn    *channel.Conn
	workdir string
	user    string
}

// channelFor returns the pod's channel: the one held, or a new one when
// none is held or the last one broke (this is where a broken attach
// stream is reconnected, and where a new resident takes a pod over: the
// keeper fences the previous holder). ok=false: the pod does not serve the
// channel (made in exec mode, or by an older resident); use the exec
// subresource.
func (p *Provider) channelFor(ctx context.Context, id string) (pc podChannel, ok bool, err error) {
	if _, gone := p.terminated.Load(id); gone || !validID(id) {
		return podChannel{}, false, notFound(id)
	}
	h := p.holderOf(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone {
		return podChannel{}, false, notFound(id)
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	if !h.known {
		pod, err := p.getSandbox(cctx, id)
		if err != nil {
			return podChannel{}, false, err
		}
		if err := p.checkRunning(pod); err != nil {
			return podChannel{}, false, err
		}
		h.known = true
		h.setMode(pod)
	}
	if !h.channel {
		return podChannel{}, false, nil
	}
	if h.conn != nil {
		select {
		case <-h.conn.Done():
			_ = h.conn.Close()
			h.conn = nil
		default:
			return podChannel{h.conn, h.workdir, h.user}, true, nil
		}
	}
	rw, err := p.attach(id, h.escaped)
	if err != nil {
		return podChannel{}, true, classify(cctx, "sandbox channel", err)
	}
	// Sealed: the keeper's side of the attach stream is its stdout, which
	// the container runtime writes to the node's pod log; the key goes on
	// stdin, which nothing records.
	conn, err := channel.Open(cctx, rw, channel.Options{Logger: p.log.Named("channel"), Seal: h.sealed})
	if err != nil {
		_ = rw.Close()
		return podChannel{}, true, p.explainExecFailure(ctx, id, p.attachError(cctx, rw, err))
	}
	h.conn, h.rw = conn, rw
	return podChannel{conn, h.workdir, h.user}, true, nil
}

// attachError says why a channel did not open: the attach stream's own
// error (refused, the pod gone) when it ended, else the channel's.
func (p *Provider) attachError(ctx context.Context, rw *attachStream, err error) error {
	if serr := rw.streamErr(); serr != nil {
		return classify(ctx, "sandbox channel", serr)
	}
	return &protocol.Error{Kind: protocol.KindTransient, Msg: "sandbox channel", Err: err}
}

// cwdOf is where an exec starts: req's cwd (from the root when relative,
// as the exec subresource path took it), else the keeper's own, the
// container's working directory (the pod's, else the image's), named so
// that the keeper resolves a relative argv[0] there too.
func (pc podChannel) cwdOf(cwd string) string {
	if cwd != "" {
		return path.Join("/", cwd)
	}
	return pc.dir()
}

// dir is where a relative file path is taken: the keeper's working
// directory, else the pod's.
func (pc podChannel) dir() string {
	if wd := pc.conn.Cwd(); wd != "" {
		return wd
	}
	return path.Join("/", pc.workdir)
}

// attachStream is the sandbox container's stdin and stdout through the
// attach subresource, as one byte stream: the keeper channel's transport.
// SPDY first, WebSocket (client-go's v5 protocol) where the server or a
// proxy cannot upgrade to SPDY (see attach). The container's stdin stays
// open across attaches (stdinOnce false), so a closed or broken stream
// leaves the keeper reachable by the next one.
type attachStream struct {
	inR    *io.PipeReader // the executor reads what the channel writes
	inW    *io.PipeWriter
	outR   *io.PipeReader // the channel reads what the executor writes
	outW   *io.PipeWriter
	out    io.Reader // outR, or its decoder for a keeper that escapes newlines
	cancel context.CancelFunc
	done   chan struct{}
	err    error // the stream's end, once done is closed
	once   sync.Once
}

// errAttachEnded is what a read or write of an attach stream that ended
// cleanly gets (the API server closed it).
var errAttachEnded = errors.New("the pod's attach stream ended")

func (p *Provider) attach(podName string, escaped bool) (*attachStream, error) {
	cs, cfg := p.client()
	req := cs.CoreV1().RESTClient().Post().Namespace(p.namespace).Resource("pods").Name(podName).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: containerSandbox, Stdin: true, Stdout: true}, parameterCodec())
	ws, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, http.MethodPost, req.URL())
	if err != nil {
		return nil, err
	}
	// SPDY first: the API server proxies it to the kubelet as it is,
	// where a WebSocket stream goes through its translator to SPDY, a
	// copy more of every byte (a forward's 64 MB GET 67 -> 84 MB/s on the
	// test cluster). WebSocket where the server or a proxy between cannot
	// upgrade to SPDY.
	exec, err := remotecommand.NewFallbackExecutor(spdy, ws, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, err
	}
	s := &attachStream{done: make(chan struct{})}
	s.inR, s.inW = io.Pipe()
	s.outR, s.outW = io.Pipe()
	s.out = s.outR
	if escaped {
		s.out = keeperproto.NewLFDecoder(s.outR)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: s.inR, Stdout: s.outW})
		if err == nil {
			err = errAttachEnded
		}
		s.err = err
		close(s.done)
		cancel()
		s.outW.CloseWithError(fmt.Errorf("%w: %w", errAttachEnded, err))
		// Only now, with the connection gone, does the executor's stdin
		// copier see its input end: it can tell the keeper nothing.
		s.inR.CloseWithError(errAttachEnded)
	}()
	return s, nil
}

func (s *attachStream) Read(b []byte) (int, error)  { return s.out.Read(b) }
func (s *attachStream) Write(b []byte) (int, error) { return s.inW.Write(b) }

// Close ends the stream and waits for the executor to return: the
// connection is cancelled and the output pipe closed (an output copy
// blocked on a reader that is gone ends), but the input pipe only once
// the connection is gone, so the executor never sees its stdin end while
// it could still tell the kubelet (see attach).
func (s *attachStream) Close() error {
	s.once.Do(func() {
		s.cancel()
		_ = s.outR.Close()
		<-s.done
		_ = s.inW.Close()
	})
	return nil
}

// streamErr is the stream's error once it ended, else nil.
func (s *attachStream) streamErr() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}
