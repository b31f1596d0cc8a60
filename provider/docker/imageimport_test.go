package docker

import (
	"archive/tar"
)

// symlinkEntry builds the pull test's own image; images are imported by
// dockertest.ImportImage.
func symlinkEntry(name, target string) tarEntry {
	return func(tw *tar.Writer) error {
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777})
	}
}
