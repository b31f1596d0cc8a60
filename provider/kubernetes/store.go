package kubernetes

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/resident-dev/resident/internal/keeper"
	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// A store call with no sandbox running browses a claim through a reader
// pod: the keeper image, the claim mounted read-only at StoreRoot, no
// network use, no capability but DAC_READ_SEARCH (to read every file
// whatever its owner), removed when the call ends. Its keeper ends it
// after readerLifetime and the cluster after activeDeadlineSeconds, so a
// reader left by a resident that died goes by itself; the sweep at
// ApplyAuth removes the ended ones.
const (
	containerReader = "reader"
	readerLifetime  = 600
)

func (p *Provider) readerPod(claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "resident-reader-" + strings.TrimPrefix(newID(), idPrefix), Namespace: p.namespace, Labels: baseLabels(RoleReader)},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  new(false),
			EnableServiceLinks:            new(false),
			TerminationGracePeriodSeconds: new(int64(0)),
			ActiveDeadlineSeconds:         new(int64(readerLifetime + lifetimeSlack)),
			SecurityContext:               &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: containerReader, Image: p.keeperImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{keeperproto.Path, keeperproto.CmdAlive, strconv.Itoa(readerLifetime)},
				VolumeMounts: []corev1.VolumeMount{{Name: "store", MountPath: keeperproto.StoreRoot, ReadOnly: true}},
				SecurityContext: &corev1.SecurityContext{
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"DAC_READ_SEARCH"}},
					AllowPrivilegeEscalation: new(false),
					ReadOnlyRootFilesystem:   new(true),
				},
			}},
			Volumes: []corev1.Volume{{Name: "store", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true}}}},
		},
	}
}

// withReader runs a reader pod for the volume and returns it running, with
// the function that removes it.
func (p *Provider) withReader(ctx context.Context, owner provider.Owner, volume string) (string, func(), error) {
	if err := validateOwner(owner); err != nil {
		return "", nil, err
	}
	ref, found, err := p.lookupVolume(ctx, owner, volume)
	if err != nil {
		return "", nil, err
	}
	if !found {
		return "", nil, provider.VolumeNotFound(volume)
	}
	cs, _ := p.client()
	pod, err := cs.CoreV1().Pods(p.namespace).Create(ctx, p.readerPod(ref.claim), metav1.CreateOptions{})
	if err != nil {
		return "", nil, classify(ctx, "reader pod create", err)
	}
	remove := func() { p.removeLeftoverPod(pod.Name) }
	rctx, cancel := context.WithTimeoutCause(ctx, p.timing.reader, errPodStartTimeout)
	defer cancel()
	if _, err := p.awaitRunning(rctx, pod); err != nil { // no channel: a reader pod is not a sandbox
		remove()
		return "", nil, err
	}
	return pod.Name, remove, nil
}

func (p *Provider) removeLeftoverPod(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), p.timing.api)
	defer cancel()
	cs, _ := p.client()
	_ = cs.CoreV1().Pods(p.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
}

// storePath is a store path inside the volume: "" and "/" are its root, a
// ".." element is refused; the keeper then refuses every symlink on it.
func storePath(p string) (string, error) {
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", protocol.Errorf(protocol.KindInvalidRequest, "path %q: \"..\" is not allowed", p)
		}
		if strings.ContainsRune(el, 0) {
			return "", protocol.Errorf(protocol.KindInvalidRequest, "path must not contain NUL")
		}
	}
	return strings.TrimPrefix(path.Join("/", p), "/"), nil
}

// ListDir lists at most limit entries through a reader pod.
func (p *Provider) ListDir(ctx context.Context, owner provider.Owner, root, dir string, limit int) ([]protocol.DirEntry, bool, error) {
	rel, err := storePath(dir)
	if err != nil {
		return nil, false, err
	}
	reader, remove, err := p.withReader(ctx, owner, root)
	if err != nil {
		return nil, false, err
	}
	defer remove()
	h, err := p.runKeeperHeader(ctx, reader, containerReader, nil, keeperproto.CmdLs, "-limit", strconv.Itoa(max(1, limit)), "--", rel)
	if err != nil {
		return nil, false, err
	}
	if h.Error != "" {
		return nil, false, storeErr(h, root, dir)
	}
	out := make([]protocol.DirEntry, 0, len(h.Entries))
	for _, e := range h.Entries {
		out = append(out, protocol.DirEntry{Name: e.Name, Type: e.Type, Size: e.Size, Mtime: time.Unix(0, e.MtimeNS).UTC()})
	}
	return out, h.Truncated, nil
}

func storeErr(h keeperproto.Header, root, p string) error {
	kind := protocol.Kind(h.Kind)
	if kind == "" {
		kind = protocol.KindInternal
	}
	return protocol.Errorf(kind, "volume %q path %q: %s", root, p, h.Error)
}

// ReadFile streams a file through a reader pod, removed when the stream is
// closed.
func (p *Provider) ReadFile(ctx context.Context, owner provider.Owner, root, file string) (io.ReadCloser, error) {
	rel, err := storePath(file)
	if err != nil {
		return nil, err
	}
	reader, remove, err := p.withReader(ctx, owner, root)
	if err != nil {
		return nil, err
	}
	exec, err := p.executor(reader, containerReader, keeper.Command(keeperproto.CmdCat, "--", rel), false)
	if err != nil {
		remove()
		return nil, classify(ctx, "read_file", err)
	}
	sctx, cancel := streamCtx()
	out, w := io.Pipe()
	var errOut limitedBuffer
	go func() {
		err := exec.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: w, Stderr: &errOut})
		if _, ok := exitCode(err); ok {
			err = nil
		}
		w.CloseWithError(err)
	}()
	rc := &storeFile{r: bufio.NewReader(out), pipe: out, stop: func() { cancel(); remove() }}
	line, err := rc.r.ReadBytes('\n')
	var h keeperproto.Header
	if err != nil || json.Unmarshal(line, &h) != nil {
		rc.Close()
		if err == nil {
			err = errors.New("unreadable answer")
		}
		return nil, classify(ctx, "read_file", err)
	}
	if h.Error != "" {
		rc.Close()
		return nil, storeErr(h, root, file)
	}
	rc.left = h.Size
	return rc, nil
}

// storeFile is a file's bytes from a reader pod; Close ends the stream and
// removes the pod, also while a Read is blocked.
type storeFile struct {
	r    *bufio.Reader
	pipe *io.PipeReader
	left int64
	stop func()
}

func (f *storeFile) Read(b []byte) (int, error) {
	if f.left <= 0 {
		return 0, io.EOF
	}
	n, err := f.r.Read(b[:min(int64(len(b)), f.left)])
	f.left -= int64(n)
	if err == io.EOF && f.left > 0 {
		err = protocol.Errorf(protocol.KindTransient, "read_file: the stream ended %d bytes short", f.left)
	}
	return n, err
}

func (f *storeFile) Close() error {
	f.pipe.CloseWithError(io.ErrClosedPipe)
	f.stop()
	return nil
}
