package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// The meta it returns is shared: read it, never change it.
func (p *Provider) readMeta(id string) (*meta, error) {
	path := filepath.Join(p.sandboxDir(id), metaFile)
	file, err := os.Stat(path)
	if err != nil {
		p.forgetMeta(id)
		return nil, err
	}
	p.mu.Lock()
	kept, ok := p.metas[id]
	p.mu.Unlock()
	if ok && kept.sameFile(file) {
		return kept.m, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := &meta{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("sandbox %s: meta.json: %w", id, err)
	}
	p.rememberTags(id, m.Tags)
	p.mu.Lock()
	if p.metas != nil {
		p.metas[id] = cachedMeta{m: m, file: file}
	}
	p.mu.Unlock()
	return m, nil
}

// cachedMeta is a meta.json as read, with the file it was read from.
// meta.json is written once, into a staging directory renamed into place,
// so the same file is the same meta: every later lookup (each list_owned,
// read_owner, exec and file call reads it) costs a stat instead of a read
// and a JSON decode, and list_owned over many sandboxes stays cheap. The
// file is checked each time because another resident on the same state
// directory may have terminated the sandbox.
type cachedMeta struct {
	m    *meta
	file os.FileInfo
}

func (c cachedMeta) sameFile(file os.FileInfo) bool {
	return os.SameFile(c.file, file) && c.file.Size() == file.Size() && c.file.ModTime().Equal(file.ModTime())
}

// keepMetasOf drops the metas of sandboxes no longer listed: another
// resident on the state directory terminated them.
func (p *Provider) keepMetasOf(listed []os.DirEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.metas) == 0 {
		return
	}
	present := make(map[string]bool, len(listed))
	for _, e := range listed {
		present[e.Name()] = true
	}
	for id := range p.metas {
		if !present[id] {
			delete(p.metas, id)
		}
	}
}

func (p *Provider) forgetMeta(id string) {
	p.mu.Lock()
	delete(p.metas, id)
	p.mu.Unlock()
}

// rememberTags keeps a sandbox's tags for KnownOwner: meta.json is written
// once, so they never change while the sandbox exists, and every exec's
// lookup, which reads it again, need not copy them again.
func (p *Provider) rememberTags(id string, tags map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, known := p.tags[id]; !known && p.tags != nil {
		p.tags[id] = maps.Clone(tags)
	}
}

var _ provider.OwnerMemory = (*Provider)(nil)

// KnownOwner answers as ReadOwner would, from the tags of a sandbox this
// provider created or read, without reading its meta.json again; whether
// the sandbox still exists is not answered (provider.OwnerMemory).
func (p *Provider) KnownOwner(sandboxID, ownerKey string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tags, ok := p.tags[sandboxID]
	if !ok {
		return "", false
	}
	return provider.OwnerOf(tags, ownerKey), true
}

// load reads a sandbox's meta, expired or not. A malformed id never touches
// the filesystem.
func (p *Provider) load(id string) (*meta, error) {
	if !validID(id) {
		return nil, notFound(id)
	}
	m, err := p.readMeta(id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// lookup loads a sandbox that can still run things. An expired one is
// conflict, and is ended on the spot if no timer did it yet (the resident
// was down when its lifetime ran out): the lifetime holds either way.
func (p *Provider) lookup(id string) (*meta, error) {
	m, err := p.load(id)
	if err != nil {
		return nil, err
	}
	if m.expired(p.now()) {
		p.end(id)
		return nil, expiredErr(id, m)
	}
	return m, nil
}

func expiredErr(id string, m *meta) error {
	return protocol.Errorf(protocol.KindConflict, "sandbox %s expired at %s (its lifetime_s ended); terminate it", id, m.ExpiresAt.Format(time.RFC3339))
}

// ListOwned lists what owner owns (provider.Owner.Owns: the exact owner
// tag and no other owner-shaped one). An expired sandbox stays listed, as
// expired, until it is terminated.
func (p *Provider) ListOwned(ctx context.Context, owner provider.Owner) ([]protocol.Sandbox, error) {
	if err := p.Start(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p.sandboxes)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	p.keepMetasOf(entries)
	out := []protocol.Sandbox{}
	if owner.Key == "" || owner.InstallID == "" {
		return out, nil
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !validID(e.Name()) {
			continue // staging directories and strays
		}
		m, err := p.load(e.Name())
		if err != nil {
			if protocol.KindOf(err) != protocol.KindNotFound {
				p.log.Warn("unreadable sandbox skipped", zap.String("sandbox_id", e.Name()), zap.Error(err))
			}
			continue
		}
		if !owner.Owns(m.Tags) {
			continue
		}
		state := protocol.StateRunning
		if m.expired(p.now()) {
			p.end(m.ID) // no timer may have run: the resident was down
			state = protocol.StateExpired
		}
		out = append(out, protocol.Sandbox{
			SandboxID: m.ID, Tags: maps.Clone(m.Tags), CreatedAt: m.CreatedAt,
			State: state, Image: m.Image,
		})
	}
	slices.SortFunc(out, func(a, b protocol.Sandbox) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.SandboxID, b.SandboxID))
	})
	// Sorted at full precision, reported in whole seconds: the precision
	// every provider gives (Docker's list has no more).
	for i := range out {
		out[i].CreatedAt = out[i].CreatedAt.UTC().Truncate(time.Second)
	}
	return out, nil
}

// ReadOwner returns who owns the sandbox under ownerKey (provider.OwnerOf):
// "" when nobody does, or when its tags name more than one owner. An expired
// sandbox still has its owner.
func (p *Provider) ReadOwner(ctx context.Context, sandboxID, ownerKey string) (string, error) {
	if err := p.Start(); err != nil {
		return "", err
	}
	m, err := p.load(sandboxID)
	if err != nil {
		return "", err
	}
	return provider.OwnerOf(m.Tags, ownerKey), nil
}

// Terminate removes a sandbox and kills everything running in it.
func (p *Provider) Terminate(ctx context.Context, sandboxID string) (bool, error) {
	if err := p.Start(); err != nil {
		return false, err
	}
	if !validID(sandboxID) {
		return false, nil
	}
	return p.remove(sandboxID, "terminated")
}

// remove takes a sandbox out of sight with one rename, which also decides a
// race between two removers (only one rename succeeds), then kills its
// processes and deletes it. Exec registers processes under p.mu after
// checking the directory, so none can start unseen after the rename.
func (p *Provider) remove(id, reason string) (existed bool, err error) {
	aside := filepath.Join(p.trash, id+"-"+newID()[len(idPrefix):])
	p.mu.Lock()
	_ = os.MkdirAll(p.trash, 0o700)
	if err := os.Rename(p.sandboxDir(id), aside); err != nil {
		p.mu.Unlock()
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("sandbox %s: remove: %w", id, err)
	}
	procs, groups, init := p.running[id], p.groups[id], p.inits[id]
	delete(p.running, id)
	delete(p.groups, id)
	delete(p.ended, id)
	delete(p.inits, id)
	delete(p.tags, id)
	delete(p.metas, id)
	if t := p.timers[id]; t != nil {
		t.Stop()
		delete(p.timers, id)
	}
	p.mu.Unlock()
	for pr := range procs {
		pr.killTree()
	}
	if init == nil {
		init = p.strayInit(aside) // an earlier resident's, found by its init.json
	}
	if init != nil {
		init.kill(true) // the keeper, and with it every process of the sandbox
	}
	p.reap(aside, groups)
	removeCgroups(id)
	p.log.Info("sandbox "+reason, zap.String("sandbox_id", id))
	return true, nil
}

// reap kills whatever still runs in a removed sandbox (an earlier instance's
// execs, background children) and deletes its files.
func (p *Provider) reap(dir string, groups map[int]uint64) {
	killWhere(inSandbox(dir, groups))
	if err := removeTree(dir); err != nil {
		p.log.Warn("sandbox files left behind", zap.String("dir", dir), zap.Error(err))
	}
}

// removeTree is os.RemoveAll that also copes with directories a sandbox made
// unwritable (chmod 0555), which would otherwise stop the removal.
func removeTree(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
