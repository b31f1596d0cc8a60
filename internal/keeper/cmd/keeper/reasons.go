package main

import (
	"errors"
	"syscall"
)

// errnoReason names the protocol's error reason for an errno in err, or ""
// (the names are the protocol's; the keeper does not import it).
func errnoReason(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return ""
	}
	switch errno {
	case syscall.ENOENT:
		return "no_such_file"
	case syscall.EISDIR:
		return "is_directory"
	case syscall.ENOTDIR:
		return "not_directory"
	case syscall.EACCES, syscall.EPERM, syscall.EROFS, syscall.ETXTBSY:
		return "permission_denied"
	case syscall.EEXIST:
		return "exists"
	case syscall.EFBIG, syscall.ENOSPC, syscall.EDQUOT:
		return "too_large"
	}
	return ""
}
