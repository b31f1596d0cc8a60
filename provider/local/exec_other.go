//go:build !linux

package local

import (
	"context"
	"errors"
	"io"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Exec needs /proc to find and kill a whole process tree; without it a
// timeout could leave processes running, so local refuses instead.
func (p *Provider) Exec(ctx context.Context, sandboxID string, req provider.ExecRequest) (provider.Process, error) {
	return nil, protocol.Errorf(protocol.KindInvalidRequest, "the local provider runs commands on Linux only")
}

type process struct{}

func (*process) killTree() {}

type procInfo struct{}

func (procInfo) cwdWithin(string) bool       { return false }
func (procInfo) inGroup(map[int]uint64) bool { return false }
func killWhere(func(procInfo) bool)          {}

func inSandbox(string, map[int]uint64) func(procInfo) bool {
	return func(procInfo) bool { return false }
}

// Elsewhere nothing is isolated: paths are what they are on the host.
func (p *Provider) isolated() bool          { return false }
func (p *Provider) inSystemDir(string) bool { return false }
func reservedMountPoint(string) bool        { return false }

const oDirectory = 0 // the Stat before the open has to do

// sandboxInit is Linux's only: elsewhere no sandbox has an init.
type sandboxInit struct{}

func (*sandboxInit) kill(bool) {}
func (*sandboxInit) release()  {}

func (p *Provider) strayInit(string) *sandboxInit                     { return nil }
func (p *Provider) startSandbox(context.Context, string, *meta) error { return nil }

func removeCgroups(string) {}
func limitsEnforced() bool { return false }

func (p *Provider) writeFileInSandbox(ctx context.Context, id, filePath string, data []byte, mode *uint32) error {
	return p.writeFile(id, filePath, data, mode) // never called: nothing is isolated here
}

func (p *Provider) readInSandbox(context.Context, string, string) (io.ReadCloser, error) {
	return nil, errors.New("never called: nothing is isolated here")
}

func (p *Provider) listInSandbox(context.Context, string, string, int) ([]protocol.DirEntry, bool, error) {
	return nil, false, errors.New("never called: nothing is isolated here")
}

func (p *Provider) writeFromInSandbox(context.Context, string, string, *uint32, io.Reader) (int64, error) {
	return 0, errors.New("never called: nothing is isolated here")
}
