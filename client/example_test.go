package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"

	"github.com/resident-dev/resident/client"
	"github.com/resident-dev/resident/protocol"
)

// A whole session: spawn, initialize, create a sandbox, run a command with
// its output streamed and stdin fed, reap the sandbox, shut down.
func Example() {
	ctx := context.Background()
	state, _ := os.MkdirTemp("", "example-state-")
	defer os.RemoveAll(state)

	c, err := client.Spawn(exec.Command("resident", "--provider", "local", "--state-dir", state), client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	info, err := c.Initialize(ctx, protocol.InitializeParams{
		InstallID:   "example-host",
		Credentials: map[string]string{"api_token": "tok_9f8e7d6c5b4a"}, // scrubbed from everything the resident sends
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("provider:", info.Provider.Name, "stdin:", info.Capabilities.Stdin)

	id, err := c.Create(ctx, protocol.CreateParams{Tags: map[string]string{"task": "example"}})
	if err != nil {
		log.Fatal(err)
	}

	var stderr strings.Builder
	res, err := c.Exec(ctx, protocol.ExecParams{
		SandboxID: id,
		Argv:      []string{"sh", "-c", `read name; echo "hello, $name"; echo "token=tok_9f8e7d6c5b4a"; echo oops >&2; exit 3`},
	}, client.Streams{Stdin: strings.NewReader("world\n"), Stdout: os.Stdout, Stderr: &stderr})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stderr: %q, exit code: %d\n", stderr.String(), res.ExitCode)

	_, err = c.Exec(ctx, protocol.ExecParams{SandboxID: "lcl-0000000000000000", Argv: []string{"true"}}, client.Streams{})
	fmt.Println("not found:", errors.Is(err, client.ErrNotFound), client.KindOf(err))

	existed, _ := c.Terminate(ctx, id)
	fmt.Println("terminated:", existed)
	if err := c.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("close:", c.Close())
	// Output:
	// provider: local stdin: true
	// hello, world
	// token=[REDACTED]
	// stderr: "oops\n", exit code: 3
	// not found: true not_found
	// terminated: true
	// close: <nil>
}
