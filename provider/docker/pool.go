package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Warm pool members (provider.Pooler). Labels cannot change once a
// container exists, so a member is made with its final labels (host tags,
// owner) plus LabelPool and LabelPoolMaxIdle, and what makes it idle is its
// name: idleNamePrefix followed by random hex. Claim renames it, by that
// name, to a name derived from its id: the engine renames one container at
// a time and the old name is gone after the first, so of two claims (two
// residents of one install) exactly one succeeds. A host never sees names
// or our labels, so a claimed member looks to it as a fresh sandbox does
// (its created_at is when the pool made it).
const (
	// LabelPool is the pool key (a digest of spec and tags) of a member.
	LabelPool = labelPrefix + "pool"
	// LabelPoolMaxIdle is the member's max idle time in seconds.
	LabelPoolMaxIdle = labelPrefix + "pool-max-idle-s"

	idleNamePrefix    = "resident-idle-"
	claimedNamePrefix = "resident-claimed-"
)

var _ provider.Pooler = (*Provider)(nil)

// markIdle adds a member's labels and returns its container name; "" (the
// engine picks one) for a sandbox that is not a member.
func markIdle(labels map[string]string, idle *provider.PoolMark) string {
	if idle == nil {
		return ""
	}
	labels[LabelPool] = idle.Key
	labels[LabelPoolMaxIdle] = strconv.FormatInt(int64(idle.MaxIdle/time.Second), 10)
	var b [12]byte
	_, _ = rand.Read(b[:])
	return idleNamePrefix + hex.EncodeToString(b[:])
}

// idleNames remembers the idle name of each member this provider made or
// listed, so that Claim renames it at once instead of inspecting it first:
// the hand-out is the one engine call on a pool hit's path. A name is
// random and given to one container only, and a claim renames by it, so a
// name remembered wrongly (the member claimed elsewhere since) only makes
// the rename fail as a lost claim, which it is.
type idleNames struct {
	mu    sync.Mutex
	names map[string]string // container id -> its idle name
}

func (n *idleNames) add(id, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.names == nil || len(n.names) >= maxKnownSandboxes {
		n.names = make(map[string]string)
	}
	n.names[id] = name
}

// take returns id's idle name and forgets it: a claim is tried once by it.
func (n *idleNames) take(id string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := n.names[id]
	delete(n.names, id)
	return name, ok
}

// isIdle reports whether a listed container is an unclaimed member.
func isIdle(c container.Summary) bool {
	return c.Labels[LabelPool] != "" && len(c.Names) > 0 && strings.HasPrefix(strings.TrimPrefix(c.Names[0], "/"), idleNamePrefix)
}

// CreateIdle makes a member: Create's sandbox under an idle name.
func (p *Provider) CreateIdle(ctx context.Context, spec protocol.Spec, owner provider.Owner, tags map[string]string, mark provider.PoolMark) (string, error) {
	if mark.Key == "" || mark.MaxIdle <= 0 {
		return "", protocol.Errorf(protocol.KindInvalidRequest, "a pool member needs a pool key and a max idle time")
	}
	return p.create(ctx, spec, owner, tags, &mark)
}

// ListIdle lists owner's unclaimed members.
func (p *Provider) ListIdle(ctx context.Context, owner provider.Owner) ([]provider.IdleSandbox, error) {
	if err := validateOwner(owner); err != nil {
		return nil, err
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	list, err := p.cli.ContainerList(cctx, client.ContainerListOptions{All: true, Filters: ownedFilter(owner).Add("label", LabelPool)})
	if err != nil {
		return nil, classify(cctx, "container list", err)
	}
	var out []provider.IdleSandbox
	for _, c := range list.Items {
		if !isManaged(c.Labels, RoleSandbox) || !owner.Owns(c.Labels) || !isIdle(c) {
			continue
		}
		idle, _ := strconv.ParseInt(c.Labels[LabelPoolMaxIdle], 10, 64)
		p.idle.add(c.ID, strings.TrimPrefix(c.Names[0], "/"))
		out = append(out, provider.IdleSandbox{
			SandboxID: c.ID,
			Mark:      provider.PoolMark{Key: c.Labels[LabelPool], MaxIdle: time.Duration(idle) * time.Second},
			CreatedAt: time.Unix(c.Created, 0).UTC(),
			Running:   c.State == container.StateRunning,
		})
	}
	return out, nil
}

// Claim renames an idle member by its idle name; a second claim finds no
// container of that name. The name is remembered from the member's create
// or listing; a member this provider never saw is inspected first.
func (p *Provider) Claim(ctx context.Context, sandboxID string) error {
	if !validID(sandboxID) {
		return protocol.Errorf(protocol.KindNotFound, "pool member %q not found", sandboxID)
	}
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	name, ok := p.idle.take(sandboxID)
	if !ok {
		c, err := p.inspectSandbox(cctx, sandboxID)
		if err != nil {
			return err
		}
		name = strings.TrimPrefix(c.Name, "/")
		if c.Config == nil || c.Config.Labels[LabelPool] == "" || !strings.HasPrefix(name, idleNamePrefix) {
			return protocol.Errorf(protocol.KindNotFound, "sandbox %q is not an idle pool member", sandboxID)
		}
	}
	claimed := claimedNamePrefix + sandboxID[:24]
	_, err := p.cli.ContainerRename(cctx, name, client.ContainerRenameOptions{NewName: claimed})
	if err == nil {
		return nil
	}
	// The new name follows from the id, so a rename that lost to another
	// finds the old name gone, the new one taken, or (when the engine
	// resolved the old name just before the other rename) the container
	// already bearing it. Any of these is a claim lost.
	if now, ierr := p.inspectSandbox(cctx, sandboxID); cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) ||
		(ierr == nil && strings.TrimPrefix(now.Name, "/") == claimed) {
		return protocol.Errorf(protocol.KindNotFound, "pool member %q was claimed already", sandboxID)
	}
	return classify(cctx, "container rename", err)
}

// sweepIdle is the start sweep's part for pools (sweep.go): a member of any
// install whose max idle time has passed is removed, claimed first so that
// one a live resident just handed out is never touched. A member records
// its own max idle time, so this needs nothing from the resident that made
// it, which may be long dead.
func (p *Provider) sweepIdle(ctx context.Context) error {
	cctx, cancel := p.callCtx(ctx)
	defer cancel()
	list, err := p.cli.ContainerList(cctx, client.ContainerListOptions{All: true, Filters: roleFilter(RoleSandbox).Add("label", LabelPool)})
	if err != nil {
		return classify(cctx, "container list", err)
	}
	var errs []error
	for _, c := range list.Items {
		idle, _ := strconv.ParseInt(c.Labels[LabelPoolMaxIdle], 10, 64)
		if !isIdle(c) || time.Since(time.Unix(c.Created, 0)) < time.Duration(idle)*time.Second {
			continue
		}
		if p.Claim(ctx, c.ID) != nil {
			continue // claimed since it was listed
		}
		if _, err := p.removeWithin(ctx, c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
