package providertest

import (
	"io"
	"path"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// SeedThroughSandbox fills a store volume the way a host would: a sandbox
// of owner mounts it (which creates it, labelled as the provider labels
// it) and a shell writes each file. It suits any provider whose image has
// sh, mkdir, dirname and cat, so a Harness.Volume needs no backend access.
func SeedThroughSandbox(t *testing.T, p provider.Provider, image string, owner provider.Owner, volume string, files map[string]string) {
	t.Helper()
	id, err := p.Create(ctx(t), protocol.Spec{Image: image, Volumes: []protocol.VolumeMount{{Name: volume, Path: "seed"}}}, owner, nil)
	if err != nil {
		t.Fatalf("seed volume %s: %v", volume, err)
	}
	defer func() { _, _ = p.Terminate(ctx(t), id) }()
	for rel, content := range files {
		proc, err := p.Exec(ctx(t), id, provider.ExecRequest{
			Argv:  []string{"sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "sh", path.Join("seed", rel)},
			Stdin: true,
		})
		if err != nil {
			t.Fatalf("seed %s: %v", rel, err)
		}
		go func() { _, _ = io.Copy(proc.Stdin(), strings.NewReader(content)); _ = proc.Stdin().Close() }()
		done := make(chan struct{})
		go func() { _, _ = io.Copy(io.Discard, proc.Stderr()); close(done) }()
		_, _ = io.Copy(io.Discard, proc.Stdout())
		<-done
		if st, err := proc.Wait(); err != nil || st.Code != 0 {
			t.Fatalf("seed %s: %v (exit %d)", rel, err, st.Code)
		}
	}
}
