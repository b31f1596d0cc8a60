package resident

import (
	"context"
	"fmt"
	"path"
	"sort"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

func createSandbox(ctx context.Context, s *session, _ *call, p *protocol.CreateParams) (*protocol.CreateResult, error) {
	if err := checkTags(p.Tags); err != nil {
		return nil, err
	}
	if err := checkSpec(&p.Spec, s.prov.Secrets().EnvPrefixes); err != nil {
		return nil, err
	}
	if info := s.prov.Info(); p.Spec.RequireIsolation && !info.Capabilities.Isolation {
		return nil, invalid("spec.require_isolation: provider %s does not isolate sandboxes here (capabilities.isolation is false)", info.Name)
	}
	if info := s.prov.Info(); p.Spec.User != "" && !info.Capabilities.ExecUser {
		return nil, invalid("spec.user: provider %s cannot run a sandbox as another user (capabilities.exec_user is false)", info.Name)
	}
	if err := s.checkSnapshotImage(p.Spec.Image); err != nil {
		return nil, err
	}
	if err := s.checkBuildImage(p.Spec.Image); err != nil {
		return nil, err
	}
	policy, err := s.prepareEgress(&p.Spec)
	if err != nil {
		return nil, err
	}
	if err := s.checkPool(p); err != nil {
		return nil, err
	}
	var id string
	if p.Pool != nil {
		id, err = s.createFromPool(ctx, p)
	} else {
		id, err = s.prov.Create(ctx, p.Spec, s.owner, p.Tags)
	}
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		// Created in the race with a cancel: the host will be told
		// cancelled and never learn the id, so remove the orphan now.
		s.removeOrphan(id)
		return nil, ctx.Err()
	}
	if policy != nil {
		if err := s.startEgress(ctx, id, policy); err != nil {
			// A sandbox without its proxy is not the one asked for.
			s.removeOrphan(id)
			return nil, err
		}
	}
	s.log.Info("sandbox created", zap.String("sandbox_id", id), zap.String("image", p.Spec.Image))
	s.watch.sandbox(protocol.WatchCreated, id, protocol.StateRunning)
	return &protocol.CreateResult{SandboxID: id}, nil
}

func (s *session) removeOrphan(id string) {
	s.endNet(id)
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.GracePeriod)
	defer cancel()
	if _, err := s.prov.Terminate(ctx, id); err != nil {
		s.log.Warn("sandbox created for a cancelled request could not be removed; list_owned will show it",
			zap.String("sandbox_id", id), zap.Error(err))
	}
}

func listOwned(ctx context.Context, s *session, _ *call, _ *struct{}) (*protocol.ListOwnedResult, error) {
	boxes, err := s.prov.ListOwned(ctx, s.owner)
	if err != nil {
		return nil, err
	}
	// The provider promised an exact, unambiguous owner match; filtering
	// again costs nothing and keeps a provider bug from leaking another
	// install's ids, or a sandbox that belongs to nobody.
	owned := make([]protocol.Sandbox, 0, len(boxes))
	for _, b := range boxes {
		if !s.owner.Owns(b.Tags) {
			s.log.Error("provider listed a sandbox it does not own for us; dropped", zap.String("sandbox_id", b.SandboxID))
			continue
		}
		if b.Tags == nil {
			b.Tags = map[string]string{}
		}
		owned = append(owned, b)
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i].CreatedAt.Before(owned[j].CreatedAt) })
	return &protocol.ListOwnedResult{Sandboxes: owned}, nil
}

// readOwner answers null for a sandbox that is missing or not ours: a host
// learns nothing about other installs' sandboxes, not even that they exist.
func readOwner(ctx context.Context, s *session, _ *call, p *protocol.SandboxIDParams) (*protocol.ReadOwnerResult, error) {
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return nil, err
	}
	switch err := s.checkOwned(ctx, p.SandboxID); {
	case err == nil:
		owner := s.owner.InstallID
		return &protocol.ReadOwnerResult{Owner: &owner}, nil
	case protocol.KindOf(err) == protocol.KindNotFound:
		return &protocol.ReadOwnerResult{}, nil
	default:
		return nil, err
	}
}

func terminate(ctx context.Context, s *session, _ *call, p *protocol.SandboxIDParams) (*protocol.TerminateResult, error) {
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return nil, err
	}
	// From memory where the provider has it, as for exec: Terminate looks
	// the sandbox up itself and treats a missing one as not existing.
	switch err := s.checkOwnedBeforeExec(ctx, p.SandboxID); {
	case protocol.KindOf(err) == protocol.KindNotFound:
		return &protocol.TerminateResult{Existed: false}, nil
	case err != nil:
		return nil, err
	}
	s.endNet(p.SandboxID) // its forwards and proxy end with it
	existed, err := s.prov.Terminate(ctx, p.SandboxID)
	if err != nil {
		return nil, err
	}
	s.log.Info("sandbox terminated", zap.String("sandbox_id", p.SandboxID), zap.Bool("existed", existed))
	s.watch.sandbox(protocol.WatchTerminated, p.SandboxID, "")
	return &protocol.TerminateResult{Existed: existed}, nil
}

func writeFile(ctx context.Context, s *session, c *call, p *protocol.WriteFileParams) (*protocol.WriteFileResult, error) {
	if p.StreamID == "" && s.writer == nil {
		return nil, invalid("provider %s cannot write files into sandboxes", s.prov.Info().Name)
	}
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return nil, err
	}
	if err := checkPath("path", p.Path); err != nil {
		return nil, err
	}
	if p.Path == "" || path.Clean("/"+p.Path) == "/" {
		return nil, invalid("path must name a file inside the sandbox")
	}
	if p.Mode != nil && *p.Mode > 0o7777 {
		return nil, invalid("mode %o is not a permission mode", *p.Mode)
	}
	if p.Size != nil && (p.StreamID == "" || *p.Size < 0) {
		return nil, invalid("size goes with stream_id and must not be negative")
	}
	if p.StreamID != "" {
		return s.writeStreamed(ctx, c, p)
	}
	if int64(len(p.Data)) > s.opts.Limits.MaxFileBytes {
		return nil, &protocol.Error{Kind: protocol.KindQuota, Reason: protocol.ReasonTooLarge, Field: "data",
			Msg: fmt.Sprintf("data is %d bytes, over the %d byte limit for write_file (stream larger files with stream_id and upload/data)", len(p.Data), s.opts.Limits.MaxFileBytes)}
	}
	if err := s.checkOwned(ctx, p.SandboxID); err != nil {
		return nil, err
	}
	if err := s.writer.WriteFile(ctx, p.SandboxID, p.Path, p.Data, p.Mode); err != nil {
		return nil, err
	}
	return &protocol.WriteFileResult{Bytes: int64(len(p.Data))}, nil
}

// checkOwnedBeforeExec is checkOwned answered from the provider's memory
// when it has one: an exec in a sandbox removed since fails not_found at
// the provider, so only ownership needs an answer here, and it never
// changes. That saves one backend round trip per exec. A remembered
// foreign sandbox still goes the long way, so it is refused as slowly as a
// missing one and its existence cannot be timed.
func (s *session) checkOwnedBeforeExec(ctx context.Context, id string) error {
	if memory, ok := s.prov.(provider.OwnerMemory); ok {
		if owner, known := memory.KnownOwner(id, s.owner.Key); known && owner == s.owner.InstallID {
			return nil
		}
	}
	return s.checkOwned(ctx, id)
}

// checkOwned is the ownership gate in front of every call on a sandbox id: a
// sandbox of another install is reported exactly as a missing one.
func (s *session) checkOwned(ctx context.Context, id string) error {
	owner, err := s.prov.ReadOwner(ctx, id, s.owner.Key)
	switch {
	case err != nil && protocol.KindOf(err) != protocol.KindNotFound:
		return err
	case err != nil || owner != s.owner.InstallID:
		// One message for missing and foreign, so they cannot be told
		// apart by its wording.
		return protocol.Errorf(protocol.KindNotFound, "sandbox %q not found", id)
	}
	return nil
}
