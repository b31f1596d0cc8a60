package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/resident-dev/resident/provider"
)

// A volume is a directory under volumes/; its record, volume-meta/NAME.json,
// sits beside it, never inside what a host browses. The record holds the
// owner tag of the install that created the volume: ownership is decided on
// it by provider.AccessTo, as for sandboxes. A directory without a record
// (made by hand, or by a resident older than owner-scoped volumes) is owned
// by nobody and reachable only through an operator's grant.

type volumeMeta struct {
	Name      string            `json:"name"`
	CreatedAt time.Time         `json:"created_at"`
	Tags      map[string]string `json:"tags,omitempty"`
}

func (p *Provider) volumeDir(name string) string { return filepath.Join(p.volumes, name) }

func (p *Provider) volumeMetaPath(name string) string {
	return filepath.Join(p.volumeMeta, name+".json")
}

// readVolumeMeta returns a volume's record and whether it has a readable one.
func (p *Provider) readVolumeMeta(name string) (volumeMeta, bool) {
	var vm volumeMeta
	data, err := os.ReadFile(p.volumeMetaPath(name))
	if err != nil || json.Unmarshal(data, &vm) != nil {
		return volumeMeta{}, false
	}
	return vm, true
}

func (p *Provider) access(owner provider.Owner, name string, vm volumeMeta) provider.VolumeAccess {
	return provider.AccessTo(owner, name, vm.Tags, p.grants)
}

// mountVolume returns the directory of a volume spec.volumes names, for a
// read-write mount (local cannot enforce read-only ones). A missing volume is
// claimed for owner: its record is created exclusively first, so of two
// installs racing for a name exactly one wins and the other finds it taken.
// A volume owner may not use is VolumeNotFound, as on every store call.
func (p *Provider) mountVolume(owner provider.Owner, name string) (string, error) {
	dir := p.volumeDir(name)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := p.claimVolume(owner, name); err != nil {
			return "", err
		}
	}
	vm, _ := p.readVolumeMeta(name)
	switch p.access(owner, name, vm) {
	case provider.VolumeHidden:
		return "", provider.VolumeNotFound(name)
	case provider.VolumeReadOnly:
		return "", provider.ReadOnlyGrant(name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("volume %s: %w", name, err)
	}
	return dir, nil
}

// claimVolume writes a new volume's record unless one exists (link(2)
// refuses to replace a file). A record already there is left as it is: the
// caller judges it.
func (p *Provider) claimVolume(owner provider.Owner, name string) error {
	data, _ := json.Marshal(volumeMeta{Name: name, CreatedAt: p.now().UTC(), Tags: map[string]string{owner.Key: owner.InstallID}})
	tmp, err := os.CreateTemp(p.volumeMeta, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), p.volumeMetaPath(name))
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	return nil
}
