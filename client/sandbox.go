package client

import (
	"context"

	"github.com/resident-dev/resident/protocol"
)

// Create makes a sandbox (sandbox/create) and returns its id. The resident
// adds the owner tag last; a tag with the owner tag's key is refused. A
// provider with capabilities.image_pull may pull the image first and report
// progress to Options.OnPullProgress.
func (c *Client) Create(ctx context.Context, p protocol.CreateParams) (string, error) {
	var res protocol.CreateResult
	if err := c.call(ctx, protocol.MethodSandboxCreate, p, &res); err != nil {
		return "", err
	}
	return res.SandboxID, nil
}

// WriteFile puts a file into a sandbox you own (sandbox/write_file) and
// returns the bytes written. A nil p.Mode means 0644. Data is at most
// limits.max_file_bytes (8 MiB by default); more is ErrQuota.
func (c *Client) WriteFile(ctx context.Context, p protocol.WriteFileParams) (int64, error) {
	if p.Data == nil {
		p.Data = []byte{} // "data" is required, and omitempty would drop a nil slice
	}
	var res protocol.WriteFileResult
	if err := c.call(ctx, protocol.MethodSandboxWrite, p, &res); err != nil {
		return 0, err
	}
	return res.Bytes, nil
}

// ListOwned lists the sandboxes this install owns, oldest first
// (sandbox/list_owned), including those an earlier resident process left.
// The list is never nil.
func (c *Client) ListOwned(ctx context.Context) ([]protocol.Sandbox, error) {
	var res protocol.ListOwnedResult
	if err := c.call(ctx, protocol.MethodSandboxList, nil, &res); err != nil {
		return nil, err
	}
	if res.Sandboxes == nil {
		res.Sandboxes = []protocol.Sandbox{}
	}
	return res.Sandboxes, nil
}

// ReadOwner reports whether this install owns a sandbox
// (sandbox/read_owner): owned is false for a missing sandbox and for
// another install's, which look the same on purpose.
func (c *Client) ReadOwner(ctx context.Context, sandboxID string) (owner string, owned bool, err error) {
	var res protocol.ReadOwnerResult
	if err := c.call(ctx, protocol.MethodSandboxOwner, protocol.SandboxIDParams{SandboxID: sandboxID}, &res); err != nil {
		return "", false, err
	}
	if res.Owner == nil {
		return "", false, nil
	}
	return *res.Owner, true, nil
}

// Terminate stops and removes a sandbox (sandbox/terminate). It is
// idempotent: existed is false when the sandbox was already gone, never
// existed, or belongs to another install.
func (c *Client) Terminate(ctx context.Context, sandboxID string) (existed bool, err error) {
	var res protocol.TerminateResult
	if err := c.call(ctx, protocol.MethodSandboxTerm, protocol.SandboxIDParams{SandboxID: sandboxID}, &res); err != nil {
		return false, err
	}
	return res.Existed, nil
}
