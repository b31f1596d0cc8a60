package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/resident-dev/resident/client"
)

// resolveID turns a unique prefix of an owned sandbox's id into the id, as
// the docker CLI does. An exact id, or a prefix no owned sandbox has, is
// passed on as given (the resident then says not_found); a prefix of more
// than one is an error naming them.
func (s *session) resolveID(ctx context.Context, given string) (string, error) {
	boxes, err := s.ListOwned(ctx)
	if err != nil {
		return "", err
	}
	var matches []string
	for _, b := range boxes {
		if b.SandboxID == given {
			return given, nil
		}
		if strings.HasPrefix(b.SandboxID, given) {
			matches = append(matches, b.SandboxID)
		}
	}
	switch len(matches) {
	case 0:
		return given, nil
	case 1:
		return matches[0], nil
	}
	sort.Strings(matches)
	return "", fmt.Errorf("%q is a prefix of %d sandboxes (%s); give more of the id: %w",
		given, len(matches), strings.Join(matches, ", "), client.ErrInvalidRequest)
}
