package local

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/resident-dev/resident/internal/beneath"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// idPrefix marks local sandbox ids; the rest is idHexLen random hex digits.
const (
	idPrefix = "lcl-"
	idHexLen = 16
)

func newID() string {
	var b [idHexLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return idPrefix + hex.EncodeToString(b[:])
}

// validID reports whether id is exactly what newID makes. An id comes from
// the host, so anything else (a separator, "..", a glob) must be refused
// before it is joined to a filesystem path.
func validID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, idPrefix)
	if !ok || len(hexPart) != idHexLen {
		return false
	}
	for _, c := range hexPart {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func notFound(id string) error {
	return protocol.Errorf(protocol.KindNotFound, "sandbox %q not found", id)
}

// goneOr is not_found when the sandbox went away under a call (a terminate
// raced it: its root vanished between the lookup and the open), err
// otherwise.
func (p *Provider) goneOr(id string, err error) error {
	if err == nil {
		return nil
	}
	if _, statErr := os.Lstat(p.sandboxDir(id)); errors.Is(statErr, fs.ErrNotExist) {
		return notFound(id)
	}
	return err
}

// validVolumeName accepts 1-64 of [A-Za-z0-9._-] except "." and "..": the
// name becomes a directory name under the state dir.
func validVolumeName(name string) bool {
	if name == "" || len(name) > 64 || name == "." || name == ".." {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// sandboxRel turns a path the host gave for a sandbox (cwd, write_file) into
// one relative to the sandbox root: an absolute path is taken inside the
// root, and ".." can never climb above it because the path is cleaned as if
// rooted first. "" and "/" are the root itself, ".".
func sandboxRel(p string) string {
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	if rel == "" {
		return "."
	}
	return rel
}

// workRel is sandboxRel for a write_file path: a relative one is taken in
// the work directory (spec.workdir, else the root), an absolute one from the
// root, and ".." never climbs above the root.
func workRel(workdir, p string) string {
	if path.IsAbs(p) {
		return sandboxRel(p)
	}
	return sandboxRel(path.Join("/", workdir, p))
}

// storeRel checks a path inside a volume. A store path names a file the host
// will read, so ".." is refused outright rather than clamped: a host asking
// for "../x" has made a mistake or is probing, and must hear so.
func storeRel(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", protocol.Errorf(protocol.KindInvalidRequest, "path contains a NUL byte")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", protocol.Errorf(protocol.KindInvalidRequest, "path %q: \"..\" is not allowed", p)
		}
	}
	return sandboxRel(p), nil
}

// within reports whether rel (cleaned, relative) is dir or below it.
func within(rel, dir string) (rest string, ok bool) {
	if rel == dir {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(rel, dir+"/"); ok {
		return rest, true
	}
	return "", false
}

// fsError gives a filesystem error from an os.Root operation its kind and
// reason: an attempt to leave the root is invalid_request, an errno with a
// protocol.Reason gets it (missing is not_found no_such_file, a path through
// a file not_directory, a denied one permission_denied), and anything else
// (an I/O error) stays kindless, so it reaches the host as transient.
func fsError(what, p string, err error) error {
	switch {
	case errors.Is(err, beneath.ErrSymlink):
		return protocol.Errorf(protocol.KindInvalidRequest, "%s %q: %v", what, p, beneath.ErrSymlink)
	case errors.Is(err, beneath.ErrEscape), errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EXDEV),
		strings.Contains(err.Error(), "path escapes"):
		// os.Root reports an escape with an unexported error, hence the text.
		return protocol.Errorf(protocol.KindInvalidRequest, "%s %q: path leaves its root", what, p)
	}
	if reason, ok := provider.ReasonOfErrno(err); ok {
		return protocol.ReasonError(reason, protocol.FieldPath, fmt.Sprintf("%s %q: %s", what, p, reasonText(reason)), err)
	}
	return &protocol.Error{Kind: protocol.KindTransient, Msg: what + " " + p, Err: err}
}

// reasonText is the kernel's words for a reason, the same on every
// provider.
func reasonText(r protocol.Reason) string {
	switch r {
	case protocol.ReasonNoSuchFile:
		return "not found"
	case protocol.ReasonIsDirectory:
		return "is a directory"
	case protocol.ReasonNotDirectory:
		return "not a directory"
	case protocol.ReasonPermissionDenied:
		return "permission denied"
	case protocol.ReasonExists:
		return "exists"
	}
	return "too large"
}

// resolve maps a cleaned sandbox-relative path to the directory it really
// lives in: a path at or below a volume mount is inside that volume, anything
// else is inside the sandbox root. Callers then open base with os.Root, so
// neither part can lead out.
func (p *Provider) resolve(root string, mounts []protocol.VolumeMount, rel string) (base, rest string) {
	for _, v := range mounts {
		if rest, ok := within(rel, v.Path); ok {
			return p.volumeDir(v.Name), rest
		}
	}
	return root, rel
}
