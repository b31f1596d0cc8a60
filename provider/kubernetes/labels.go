package kubernetes

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Labels and annotations the provider puts on what it creates, under the
// resident's namespace (host tags may not use it: provider.CheckHostTags).
const (
	LabelManaged  = provider.Namespace + "managed"
	LabelRole     = provider.Namespace + "role"
	LabelLifetime = provider.Namespace + "lifetime-s"
	LabelVersion  = provider.Namespace + "provider-version"
	// LabelSandbox names the sandbox a network policy or reader pod serves.
	LabelSandbox = provider.Namespace + "sandbox"
	// LabelVolume is a store claim's volume name (the claim's own name is
	// derived from it, see volumes.go).
	LabelVolume = provider.Namespace + "volume"
	// AnnotationTagKeys is the JSON list of the host's tag keys, so
	// list_owned returns exactly the host's tags.
	AnnotationTagKeys = provider.Namespace + "tag-keys"
)

// Roles.
const (
	RoleSandbox = "sandbox"
	RoleStore   = "store"  // a store claim
	RoleReader  = "reader" // a short-lived pod browsing a store claim
	RolePolicy  = "policy" // a sandbox's network policy
)

func baseLabels(role string) map[string]string {
	return map[string]string{LabelManaged: "true", LabelRole: role, LabelVersion: Version}
}

// sandboxLabels: host tags, then ours, then the owner tag LAST. Tags must
// be valid Kubernetes labels (a key of at most 63 characters with an
// optional DNS prefix, a value of at most 63 of [A-Za-z0-9-_.]): the API
// server would refuse the rest, so they are refused here with the reason.
func sandboxLabels(spec protocol.Spec, owner provider.Owner, tags map[string]string) (map[string]string, string, error) {
	if err := validateOwner(owner); err != nil {
		return nil, "", err
	}
	if err := provider.CheckHostTags(tags); err != nil {
		return nil, "", err
	}
	labels := map[string]string{}
	keys := []string{owner.Key}
	for k, v := range tags {
		if err := validLabel(k, v); err != nil {
			return nil, "", err
		}
		labels[k] = v
		keys = append(keys, k)
	}
	slices.Sort(keys)
	keyList, _ := json.Marshal(slices.Compact(keys))
	for k, v := range baseLabels(RoleSandbox) {
		labels[k] = v
	}
	labels[LabelLifetime] = strconv.FormatInt(spec.LifetimeS, 10)
	labels[owner.Key] = owner.InstallID
	return labels, string(keyList), nil
}

func validLabel(k, v string) error {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return protocol.Errorf(protocol.KindInvalidRequest, "tag %q is not a Kubernetes label key: %s", k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return protocol.Errorf(protocol.KindInvalidRequest, "tag %q: value %q is not a Kubernetes label value: %s", k, v, strings.Join(errs, "; "))
	}
	return nil
}

func validateOwner(owner provider.Owner) error {
	if err := owner.Validate(); err != nil {
		return err
	}
	return validLabel(owner.Key, owner.InstallID)
}

// hostTags recovers the host's tags from a pod's labels (never nil).
func hostTags(labels, annotations map[string]string) map[string]string {
	tags := map[string]string{}
	var keys []string
	if json.Unmarshal([]byte(annotations[AnnotationTagKeys]), &keys) != nil {
		return tags
	}
	for _, k := range keys {
		if v, ok := labels[k]; ok {
			tags[k] = v
		}
	}
	return tags
}

func isManaged(labels map[string]string, role string) bool {
	return labels[LabelManaged] == "true" && labels[LabelRole] == role
}

// roleSelector selects every managed object of one role; ownedSelector an
// owner's sandboxes (exact match, done by the API server and checked again).
func roleSelector(role string) string {
	return LabelManaged + "=true," + LabelRole + "=" + role
}

func ownedSelector(owner provider.Owner) string {
	return roleSelector(RoleSandbox) + "," + owner.Key + "=" + owner.InstallID
}

// Sandbox ids are pod names: idPrefix and 20 random hex digits, so an id
// is never reused and never names a pod we did not make.
const idPrefix = "resident-"

func newID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return idPrefix + hex.EncodeToString(b[:])
}

func validID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, idPrefix)
	if !ok || len(hexPart) != 20 {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		if c := hexPart[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
