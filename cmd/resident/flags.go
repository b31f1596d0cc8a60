package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/resident-dev/resident/provider"
)

// volumeGrants is the repeatable --allow-volume NAME[:rw] flag: volumes the
// resident did not create that every install may browse and mount,
// read-only unless :rw says otherwise.
type volumeGrants []provider.VolumeGrant

func (g *volumeGrants) String() string {
	if g == nil {
		return ""
	}
	parts := make([]string, 0, len(*g))
	for _, grant := range *g {
		part := grant.Name
		if grant.Writable {
			part += ":rw"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ",")
}

func (g *volumeGrants) Set(value string) error {
	grant, err := provider.ParseVolumeGrant(value)
	if err != nil {
		return err
	}
	*g = append(*g, grant)
	return nil
}

// providerOptions is the repeatable --provider-opt key=value flag: settings
// for the loaded provider, which declares the keys it takes (provider.Open
// refuses any other, listing the known ones).
type providerOptions map[string]string

func (o providerOptions) String() string {
	parts := make([]string, 0, len(o))
	for _, key := range slices.Sorted(maps.Keys(o)) {
		parts = append(parts, key+"="+o[key])
	}
	return strings.Join(parts, ",")
}

func (o providerOptions) Set(value string) error {
	key, text, ok := strings.Cut(value, "=")
	if !ok || key == "" {
		return fmt.Errorf("%q is not key=value", value)
	}
	if _, dup := o[key]; dup {
		return fmt.Errorf("option %q is set twice", key)
	}
	o[key] = text
	return nil
}
