package external

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// TestConcurrentStdinAndStartsKeepTheirAnswers: execs started while
// others write their stdin (as forwarded connections do, each a relay
// exec) each get their own answers: every request to the provider has an
// id of its own, whichever path sends it.
func TestConcurrentStdinAndStartsKeepTheirAnswers(t *testing.T) {
	p, err := openFake(t, "plain", 60*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.Create(bg(t), protocol.Spec{}, provider.Owner{Key: "ids-install-id", InstallID: "ids"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Terminate(bg(t), id)
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc, err := p.Exec(bg(t), id, provider.ExecRequest{Argv: []string{"cat"}, Stdin: true})
			if err != nil {
				t.Errorf("exec %d: %v", i, err)
				return
			}
			go func() { _, _ = io.Copy(io.Discard, proc.Stderr()) }()
			var want strings.Builder
			for j := range 5 {
				line := fmt.Sprintf("exec-%d-line-%d\n", i, j)
				want.WriteString(line)
				if _, err := io.WriteString(proc.Stdin(), line); err != nil {
					t.Errorf("exec %d stdin: %v", i, err)
				}
			}
			_ = proc.Stdin().Close()
			out, _ := io.ReadAll(proc.Stdout())
			if _, err := proc.Wait(); err != nil {
				t.Errorf("exec %d: %v", i, err)
			}
			if string(out) != want.String() {
				t.Errorf("exec %d read back %q", i, out)
			}
		}()
	}
	wg.Wait()
}
