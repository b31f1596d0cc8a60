package provider

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"syscall"

	"github.com/resident-dev/resident/protocol"
)

// SandboxFiles is the optional ability to read and list the files of a
// running sandbox (capabilities.sandbox_files), as the sandbox's own user
// (spec.user, else the image's) would see them: a file that user may not
// read is permission_denied. A relative path is taken in the sandbox's work
// directory, an absolute one from its root. A sandbox that is not running
// is conflict. Errors about the path carry a protocol.Reason (FileError
// maps an fs error to one): a missing file is not_found with reason
// no_such_file, so that it is never taken for a missing sandbox.
type SandboxFiles interface {
	// ReadSandboxFile streams a regular file (a directory is is_directory,
	// anything else not a regular file is invalid_request). As with
	// Store.ReadFile, Close may come from another goroutine while a Read
	// is blocked and must make that Read return.
	ReadSandboxFile(ctx context.Context, sandboxID, path string) (io.ReadCloser, error)
	// ListSandboxDir lists at most limit entries of a directory and whether
	// more exist; a symlink is listed as one, never followed.
	ListSandboxDir(ctx context.Context, sandboxID, path string, limit int) (entries []protocol.DirEntry, truncated bool, err error)
}

// StreamWriter is the optional ability to write a file of any size into a
// running sandbox from a stream (capabilities.upload), with FileWriter's
// rules (the sandbox's user, mode, parents, relative paths). It reads r to
// EOF and returns the bytes written. The write is atomic: the file appears
// whole (a temporary file beside it, renamed over it) or not at all. When r
// fails or ctx ends first, nothing is left behind, not even the temporary
// file, and the error is r's or ctx's. Memory stays bounded whatever the
// size. A file the user could not write in place (a read-only one) is
// refused with permission_denied even though the rename could replace it.
type StreamWriter interface {
	WriteFileFrom(ctx context.Context, sandboxID, path string, mode *uint32, r io.Reader) (int64, error)
}

// SizedUpload is an r of WriteFileFrom that knows how many bytes it will
// give (the host announced the size): a provider may take a faster path
// for it. r itself fails when the bytes turn out more or fewer.
type SizedUpload interface {
	io.Reader
	UploadSize() int64
}

// LentUpload is an r of WriteFileFrom that can hand its bytes over in the
// buffers they arrived in, without a copy: LendTo calls w.Write with each
// in turn and returns once r has ended (nil) or failed (r's error, or
// w's). The buffers are reused once w.Write returns, so a provider lends
// only to writers it knows keep nothing of them (a socket, a file, a
// bufio.Writer): that is why it is not WriteTo, which io.Copy would call
// with any writer. r fails in LendTo as in Read when the bytes turn out
// more or fewer than a SizedUpload announced.
type LentUpload interface {
	LendTo(w io.Writer) (int64, error)
}

// Resizer is the optional ability of a Process started with
// ExecRequest.TTY to change its terminal's size.
type Resizer interface {
	Resize(size protocol.WindowSize) error
}

// VolumeAdmin is the optional ability to create and delete store volumes
// (capabilities.volume_admin), owner-scoped as Store is: CreateVolume labels
// the volume with owner's tag, and a name that exists already (whoever owns
// it) is conflict with reason exists. DeleteVolume removes one of owner's
// own volumes (a granted volume is not theirs to delete: VolumeNotFound, as
// a missing one); one that a running sandbox mounts is conflict and stays.
type VolumeAdmin interface {
	CreateVolume(ctx context.Context, owner Owner, name string) error
	DeleteVolume(ctx context.Context, owner Owner, name string) error
}

// FileError gives an error of the filesystem (an *fs.PathError, an errno)
// met doing op on path its kind and reason; what has no reason stays
// invalid_request, in the kernel's words.
func FileError(op, path string, err error) error {
	msg := op + " " + path + ": " + errnoText(err)
	if reason, ok := ReasonOfErrno(err); ok {
		return protocol.ReasonError(reason, protocol.FieldPath, msg, err)
	}
	return &protocol.Error{Kind: protocol.KindInvalidRequest, Msg: msg, Err: err}
}

// ReasonOfErrno is the reason for an errno anywhere in err's chain.
func ReasonOfErrno(err error) (protocol.Reason, bool) {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return protocol.ReasonNoSuchFile, true
		case errors.Is(err, fs.ErrPermission):
			return protocol.ReasonPermissionDenied, true
		case errors.Is(err, fs.ErrExist):
			return protocol.ReasonExists, true
		}
		return "", false
	}
	switch errno {
	case syscall.ENOENT:
		return protocol.ReasonNoSuchFile, true
	case syscall.EISDIR:
		return protocol.ReasonIsDirectory, true
	case syscall.ENOTDIR:
		return protocol.ReasonNotDirectory, true
	case syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.ETXTBSY:
		return protocol.ReasonPermissionDenied, true
	case syscall.EEXIST, syscall.ENOTEMPTY:
		return protocol.ReasonExists, true
	case syscall.EFBIG, syscall.ENOSPC, syscall.EDQUOT:
		return protocol.ReasonTooLarge, true
	}
	return "", false
}

func errnoText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// RefuseUnannounced is the check a provider makes first in Exec and Create:
// an exec user, a terminal or a spec.user it does not announce
// (capabilities.exec_user, capabilities.tty) is invalid_request naming the
// capability, never ignored. The resident refuses them before they reach a
// provider; this keeps an embedder that calls the provider directly from
// running a command as the wrong user in silence.
func RefuseUnannounced(info Info, req *ExecRequest, spec *protocol.Spec) error {
	c := info.Capabilities
	switch {
	case req != nil && req.User != "" && !c.ExecUser:
		return protocol.Errorf(protocol.KindInvalidRequest, "exec user: provider %s cannot run a command as another user (capabilities.exec_user is false)", info.Name)
	case req != nil && req.TTY != nil && !c.TTY:
		return protocol.Errorf(protocol.KindInvalidRequest, "exec tty: provider %s cannot run a command on a terminal (capabilities.tty is false)", info.Name)
	case spec != nil && spec.User != "" && !c.ExecUser:
		return protocol.Errorf(protocol.KindInvalidRequest, "spec.user: provider %s cannot run a sandbox as another user (capabilities.exec_user is false)", info.Name)
	}
	return nil
}
