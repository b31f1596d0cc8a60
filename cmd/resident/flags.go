package main

import (
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
