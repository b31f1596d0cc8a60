package provider

import (
	"fmt"
	"strings"

	"github.com/resident-dev/resident/protocol"
)

// Store volumes are owner-scoped like sandboxes: the resident labels a
// volume with the owner tag of the install whose sandbox/create made it, and
// only that install sees it. A volume that no install owns (made by hand, by
// another tool, or by an older resident) is out of reach unless the operator
// allows it by name (VolumeGrant, the resident's --allow-volume flag).

// VolumeGrant is the operator's permission for every install to browse and
// mount one volume that the resident did not create. Writable is false by
// default: the volume mounts read-only.
type VolumeGrant struct {
	Name     string
	Writable bool
}

// ParseVolumeGrant reads NAME, NAME:ro or NAME:rw. NAME is 1-64 characters
// of A-Za-z0-9._-, not "." or "..": the names store volumes may have.
func ParseVolumeGrant(s string) (VolumeGrant, error) {
	name, mode, hasMode := strings.Cut(s, ":")
	g := VolumeGrant{Name: name}
	switch {
	case !validVolumeName(name):
		return g, fmt.Errorf("volume %q: a name is 1-64 characters of A-Za-z0-9._-, not . or ..", name)
	case mode == "rw":
		g.Writable = true
	case hasMode && mode != "ro":
		return g, fmt.Errorf("volume %q: mode %q is neither ro nor rw", name, mode)
	}
	return g, nil
}

func validVolumeName(name string) bool {
	if len(name) == 0 || len(name) > 64 || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// VolumeAccess is what an install may do with a volume.
type VolumeAccess int

const (
	// VolumeHidden: the volume must look exactly missing (VolumeNotFound).
	VolumeHidden VolumeAccess = iota
	// VolumeReadOnly: browse it and mount it read-only.
	VolumeReadOnly
	// VolumeReadWrite: browse it and mount it either way.
	VolumeReadWrite
)

// AccessTo decides what owner may do with an existing volume called name
// whose tags (or labels) are these: everything with one it owns (OwnerOf);
// what the operator granted with one that has no owner-shaped tag at all;
// nothing with one of another install, or an ambiguous one.
func AccessTo(owner Owner, name string, tags map[string]string, grants []VolumeGrant) VolumeAccess {
	if owner.Owns(tags) {
		return VolumeReadWrite
	}
	for k := range tags {
		if OwnerShaped(k) {
			return VolumeHidden
		}
	}
	for _, g := range grants {
		if g.Name == name {
			if g.Writable {
				return VolumeReadWrite
			}
			return VolumeReadOnly
		}
	}
	return VolumeHidden
}

// VolumeNotFound is the one answer for a volume that is missing and for one
// an install may not see, on every store call and in spec.volumes: the two
// cannot be told apart by kind or wording.
func VolumeNotFound(name string) error {
	return protocol.Errorf(protocol.KindNotFound, "volume %q not found", name)
}

// ReadOnlyGrant refuses a read-write mount of a volume the operator allowed
// read-only.
func ReadOnlyGrant(name string) error {
	return protocol.Errorf(protocol.KindInvalidRequest, "volume %q is allowed read-only; mount it with read_only: true (the operator grants writes with --allow-volume %s:rw)", name, name)
}
