package docker

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Labels the provider puts on what it creates. They live under the
// resident's namespace, which host tags may not use (provider.CheckHostTags),
// so a host can never forge them.
const (
	labelPrefix = provider.Namespace
	// LabelManaged is "true" on every container and volume the provider
	// made; nothing without it is ever listed, touched or removed.
	LabelManaged = labelPrefix + "managed"
	// LabelRole says what the object is for (the Role* values).
	LabelRole = labelPrefix + "role"
	// LabelTagKeys is the JSON list of the host's tag keys on a sandbox, so
	// list_owned returns exactly the host's tags and not the image's labels
	// that Docker merges into the container's.
	LabelTagKeys = labelPrefix + "tag-keys"
	// LabelLifetime is spec.lifetime_s, kept to tell expired from stopped.
	LabelLifetime = labelPrefix + "lifetime-s"
	// LabelUser is spec.user: the user the keeper runs every exec and file
	// operation of the sandbox as, unless the exec names another.
	LabelUser = labelPrefix + "user"
	// LabelVersion is the provider version that created the object.
	LabelVersion = labelPrefix + "provider-version"
)

// Roles.
const (
	RoleSandbox     = "sandbox"      // a sandbox container
	RoleStore       = "store"        // a store volume (store/list_volumes lists these)
	RoleScratch     = "scratch"      // a sandbox's writable /tmp or workdir on a read-only root
	RoleKeeper      = "keeper"       // the keeper volume and image
	RoleStoreHelper = "store-helper" // a short-lived container browsing a store volume
)

// baseLabels are on everything the provider creates.
func baseLabels(role string) map[string]string {
	return map[string]string{LabelManaged: "true", LabelRole: role, LabelVersion: Version}
}

// sandboxLabels builds a sandbox's labels: host tags, then ours, then the
// owner tag LAST so that no incoming tag can decide ownership.
func sandboxLabels(spec protocol.Spec, owner provider.Owner, tags map[string]string) (map[string]string, error) {
	if err := validateOwner(owner); err != nil {
		return nil, err
	}
	if err := provider.CheckHostTags(tags); err != nil {
		return nil, err
	}
	labels := map[string]string{}
	keys := []string{owner.Key}
	for k, v := range tags {
		labels[k] = v
		keys = append(keys, k)
	}
	slices.Sort(keys)
	keyList, _ := json.Marshal(slices.Compact(keys))
	for k, v := range baseLabels(RoleSandbox) {
		labels[k] = v
	}
	labels[LabelTagKeys] = string(keyList)
	// Always set, so an image's label of the same key cannot give a
	// sandbox without a lifetime one.
	labels[LabelLifetime] = strconv.FormatInt(spec.LifetimeS, 10)
	if spec.User != "" {
		labels[LabelUser] = spec.User
	}
	labels[owner.Key] = owner.InstallID
	return labels, nil
}

// checkImageLabels refuses an image whose labels the engine would merge into
// a sandbox's to make it ambiguous: an owner-shaped label of another key
// (a committed sandbox of another install carries one). Such a sandbox would
// belong to nobody, so it is never created. The image's label of owner.Key
// itself is harmless: ours replaces it.
func checkImageLabels(image string, labels map[string]string, owner provider.Owner) error {
	for k := range labels {
		if provider.OwnerShaped(k) && k != owner.Key {
			return protocol.Errorf(protocol.KindInvalidRequest, "image %q carries the owner-shaped label %q; a sandbox made from it would belong to nobody", image, k)
		}
	}
	return nil
}

func validateOwner(owner provider.Owner) error {
	if err := owner.Validate(); err != nil {
		return err
	}
	if strings.Contains(owner.Key, "=") {
		return protocol.Errorf(protocol.KindInvalidRequest, "owner tag %q=%q is not usable as a Docker label", owner.Key, owner.InstallID)
	}
	return nil
}

// hostTags recovers the host's tags from a sandbox's labels (never nil).
func hostTags(labels map[string]string) map[string]string {
	tags := map[string]string{}
	var keys []string
	if json.Unmarshal([]byte(labels[LabelTagKeys]), &keys) != nil {
		return tags
	}
	for _, k := range keys {
		if v, ok := labels[k]; ok {
			tags[k] = v
		}
	}
	return tags
}

// isManaged reports whether labels mark an object of role as ours.
func isManaged(labels map[string]string, role string) bool {
	return labels[LabelManaged] == "true" && labels[LabelRole] == role
}

// ownedFilter selects an owner's sandboxes on the engine side. Docker's
// label filter is an exact key=value match; ListOwned checks again anyway.
func ownedFilter(owner provider.Owner) client.Filters {
	return client.Filters{}.Add("label", LabelManaged+"=true", LabelRole+"="+RoleSandbox, owner.Key+"="+owner.InstallID)
}

// roleFilter selects every managed object of one role.
func roleFilter(role string) client.Filters {
	return client.Filters{}.Add("label", LabelManaged+"=true", LabelRole+"="+role)
}

// validID accepts only full container ids. Docker would also resolve names
// and id prefixes; refusing them means a sandbox id names exactly one
// container, never whichever one a prefix happens to match.
// A loop, not a regexp: `[0-9a-f]{64}` compiles into 64 states at init.
func validID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
