package provider

import (
	"strings"

	"github.com/resident-dev/resident/protocol"
)

// Ownership is decided here and only here: the resident and every provider
// call these functions, so a sandbox or volume has the same owner whichever
// of them looks at its tags (Docker labels, local's state files).

// OwnerKeySuffix ends every owner key: the resident builds it from the host's
// tag prefix as <prefix>-install-id. Any tag whose key ends so, in any letter
// case, is owner-shaped: it could decide ownership under some prefix.
const OwnerKeySuffix = "-install-id"

// Namespace is the tag and label namespace the resident and its providers
// keep for their own bookkeeping (managed, role, tag-keys...). No host tag
// may use it, in any letter case.
const Namespace = "dev.resident."

// OwnerShaped reports whether key could name an owner under some tag prefix.
func OwnerShaped(key string) bool {
	return len(key) > len(OwnerKeySuffix) && strings.EqualFold(key[len(key)-len(OwnerKeySuffix):], OwnerKeySuffix)
}

// InNamespace reports whether key lies in the resident's own namespace.
func InNamespace(key string) bool {
	return len(key) >= len(Namespace) && strings.EqualFold(key[:len(Namespace)], Namespace)
}

// CheckHostTags refuses a host tag that only the resident may set: an
// owner-shaped key (a session with one prefix could otherwise hand its
// sandbox to an install of another) or a key in Namespace. The error is
// invalid_request and names the key.
func CheckHostTags(tags map[string]string) error {
	for k := range tags {
		switch {
		case OwnerShaped(k):
			return protocol.Errorf(protocol.KindInvalidRequest, "tag %q is owner-shaped (ends in %q); only the resident sets the owner tag", k, OwnerKeySuffix)
		case InNamespace(k):
			return protocol.Errorf(protocol.KindInvalidRequest, "tag %q: the %q namespace is reserved for the resident", k, Namespace)
		}
	}
	return nil
}

// OwnerOf returns the install that owns an object with these tags (or
// labels) under the owner key: the value of key when that is the object's
// one and only owner-shaped tag. It returns "" when the object has no owner
// tag, another owner's, or more than one owner-shaped tag: such an object
// is ambiguous and belongs to nobody, so no install lists or touches it.
func OwnerOf(tags map[string]string, key string) string {
	owner, found := "", false
	for k, v := range tags {
		if !OwnerShaped(k) {
			continue
		}
		if found || k != key {
			return ""
		}
		owner, found = v, true
	}
	return owner
}

// Owns reports whether o owns an object with these tags (OwnerOf). An
// Owner with no install id owns nothing.
func (o Owner) Owns(tags map[string]string) bool {
	return o.InstallID != "" && OwnerOf(tags, o.Key) == o.InstallID
}

// Validate refuses an owner that no resident builds: a key that is not
// owner-shaped, or lies in Namespace, or an empty install id. An owner whose
// key were not owner-shaped could never be found again by OwnerOf.
func (o Owner) Validate() error {
	if !OwnerShaped(o.Key) || InNamespace(o.Key) || o.InstallID == "" {
		return protocol.Errorf(protocol.KindInvalidRequest, "owner tag %q=%q: the key must end in %q and the install id must not be empty", o.Key, o.InstallID, OwnerKeySuffix)
	}
	return nil
}
