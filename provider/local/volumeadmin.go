package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// CreateVolume makes an empty volume owned by owner. Its record is claimed
// exclusively first (claimVolume), so of two installs racing for one name
// exactly one gets it; a name that exists, whoever has it, is exists.
func (p *Provider) CreateVolume(ctx context.Context, owner provider.Owner, name string) error {
	if err := p.ready(ctx); err != nil {
		return err
	}
	if !validVolumeName(name) {
		return protocol.Errorf(protocol.KindInvalidRequest, "volume name %q: 1-64 characters of A-Za-z0-9._-", name)
	}
	exists := protocol.ReasonError(protocol.ReasonExists, protocol.FieldName, fmt.Sprintf("volume %q exists", name), nil)
	if _, err := os.Lstat(p.volumeDir(name)); err == nil {
		return exists
	}
	if _, recorded := p.readVolumeMeta(name); recorded {
		return exists
	}
	if err := p.claimVolume(owner, name); err != nil {
		return err
	}
	if vm, _ := p.readVolumeMeta(name); !owner.Owns(vm.Tags) {
		return exists // another install claimed it first
	}
	if err := os.Mkdir(p.volumeDir(name), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	return nil
}

// DeleteVolume removes one of owner's volumes and its record. A volume a
// running sandbox of this state dir mounts is conflict; a granted or
// foreign one looks missing.
func (p *Provider) DeleteVolume(ctx context.Context, owner provider.Owner, name string) error {
	if err := p.ready(ctx); err != nil {
		return err
	}
	if !validVolumeName(name) {
		return provider.VolumeNotFound(name)
	}
	vm, recorded := p.readVolumeMeta(name)
	if !recorded || !owner.Owns(vm.Tags) {
		return provider.VolumeNotFound(name)
	}
	users, err := p.sandboxesMounting(name)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return protocol.Errorf(protocol.KindConflict, "volume %q is mounted by running sandbox %s; terminate it first", name, users[0])
	}
	if err := removeTree(p.volumeDir(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	if err := os.Remove(p.volumeMetaPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	return nil
}

// sandboxesMounting lists the sandboxes not yet expired whose spec mounts
// the volume, whoever owns them.
func (p *Provider) sandboxesMounting(name string) ([]string, error) {
	entries, err := os.ReadDir(p.sandboxes)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	var users []string
	for _, e := range entries {
		m, err := p.load(e.Name())
		if err != nil || m.expired(p.now()) {
			continue
		}
		if slices.ContainsFunc(m.Spec.Volumes, func(v protocol.VolumeMount) bool { return v.Name == name }) {
			users = append(users, e.Name())
		}
	}
	return users, nil
}
