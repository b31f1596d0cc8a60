// Command resident-demo is a minimal host: it spawns the resident, runs one
// session end to end and prints every step readably. It is the README's
// "run the main job" command and a short example of writing a host. With
// --frames it also prints the JSON body of every frame, as the host sends
// it ("→ ") and receives it ("← "), in order, on its stdout.
//
//	go run ./cmd/resident-demo [--provider NAME] [--image IMAGE] [--frames]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/resident-dev/resident/protocol"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "resident-demo:", err)
		os.Exit(1)
	}
}

// run plays the session, printing every step to out.
func run(args []string, out io.Writer) error {
	flags := flag.NewFlagSet("resident-demo", flag.ContinueOnError)
	bin := flags.String("resident", "", "resident binary (default: build ./cmd/resident)")
	providerName := flags.String("provider", "local", "provider the resident loads (resident --list-providers names them)")
	image := flags.String("image", "", "image for the sandbox (docker)")
	stateDir := flags.String("state-dir", filepath.Join(os.TempDir(), "resident-demo"), "state directory")
	frames := flags.Bool("frames", false, "also print every frame sent (→) and received (←)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	printf := func(format string, a ...any) { fmt.Fprintf(out, format, a...) }
	step := func(name string) { printf("\n> %s\n", name) }
	if *bin == "" {
		*bin = filepath.Join(os.TempDir(), "resident-demo-bin")
		build := exec.Command("go", "build", "-o", *bin, "./cmd/resident")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building the resident: %w", err)
		}
	}
	logs, err := os.Create(filepath.Join(os.TempDir(), "resident-demo.log"))
	if err != nil {
		return err
	}
	defer logs.Close()
	cmd := exec.Command(*bin, "--provider", *providerName, "--state-dir", *stateDir)
	cmd.Stderr = logs
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	h := &demoHost{in: stdin, out: protocol.NewFrameReader(bufio.NewReader(stdout), 1<<30), print: out, frames: *frames}

	step("initialize")
	var init protocol.InitializeResult
	if err := h.call(protocol.MethodInitialize, map[string]any{"protocol_version": 1, "install_id": "demo",
		"credentials": map[string]string{"api_token": "demo-secret-0a1b2c3d4e"}}, &init); err != nil {
		return err
	}
	printf("  provider %s %s, resident %s, output cap %d bytes, default timeout %ds\n",
		init.Provider.Name, init.Provider.Version, init.ResidentVersion, init.Limits.OutputCapBytes, init.Limits.DefaultExecTimeoutS)

	step("sandbox/create")
	var box protocol.CreateResult
	if err := h.call(protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"image": *image}, "tags": map[string]string{"purpose": "demo"}}, &box); err != nil {
		return err
	}
	printf("  sandbox %s\n", box.SandboxID)

	script := `echo "hello from $(uname -s)"; echo "to stderr" >&2; echo "the credential is demo-secret-0a1b2c3d4e"; exit 3`
	step("sandbox/exec sh -c '" + script + "'")
	var res protocol.ExecResult
	if err := h.call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box.SandboxID, "exec_id": "demo-1", "argv": []string{"sh", "-c", script}}, &res); err != nil {
		return err
	}
	printf("  exit_code %d, %d+%d bytes, %d ms (the credential arrived scrubbed)\n", res.ExitCode, res.StdoutBytes, res.StderrBytes, res.DurationMS)

	step("sandbox/exec with a 1 s timeout on sleep 30")
	if err := h.call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box.SandboxID, "exec_id": "demo-2", "timeout_s": 1, "argv": []string{"sh", "-c", "echo sleeping; sleep 30"}}, &res); err != nil {
		return err
	}
	printf("  timed_out %v, exit_code %d (%s), output kept\n", res.TimedOut, res.ExitCode, res.Signal)

	step("sandbox/list_owned")
	var list protocol.ListOwnedResult
	if err := h.call(protocol.MethodSandboxList, nil, &list); err != nil {
		return err
	}
	for _, b := range list.Sandboxes {
		printf("  %s %s tags=%v\n", b.SandboxID, b.State, b.Tags)
	}

	step("sandbox/terminate (twice: idempotent)")
	for range 2 {
		var term protocol.TerminateResult
		if err := h.call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": box.SandboxID}, &term); err != nil {
			return err
		}
		printf("  existed %v\n", term.Existed)
	}

	step("shutdown")
	if err := h.call(protocol.MethodShutdown, nil, nil); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("resident exit: %w", err)
	}
	printf("  resident exited 0; its JSON logs are in %s\n", logs.Name())
	return nil
}

type demoHost struct {
	in     io.Writer
	out    *protocol.FrameReader
	print  io.Writer
	frames bool // print each frame's body as sent and received
	nextID int
}

// frame prints one frame's body when --frames asked for them.
func (h *demoHost) frame(arrow string, body []byte) {
	if h.frames {
		fmt.Fprintf(h.print, "  %s %s\n", arrow, body)
	}
}

// call sends one request and prints exec/output notifications until its
// response arrives.
func (h *demoHost) call(method string, params, result any) error {
	h.nextID++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.nextID, "method": method, "params": params})
	h.frame("→", body)
	if _, err := h.in.Write(protocol.AppendFrame(nil, body)); err != nil {
		return err
	}
	for {
		frame, err := h.out.Read()
		if err != nil {
			return fmt.Errorf("reading the response to %s: %w", method, err)
		}
		h.frame("←", frame)
		var msg struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string             `json:"message"`
				Data    protocol.ErrorData `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(frame, &msg); err != nil {
			return err
		}
		switch {
		case msg.Method == protocol.NotifyExecOutput:
			var o protocol.ExecOutput
			_ = json.Unmarshal(msg.Params, &o)
			for _, line := range strings.Split(strings.TrimRight(string(o.Data), "\n"), "\n") {
				fmt.Fprintf(h.print, "  [%s] %s\n", o.Stream, line)
			}
		case msg.Method != "":
			fmt.Fprintf(h.print, "  (%s)\n", msg.Method)
		case msg.Error != nil:
			return fmt.Errorf("%s: %s: %s", method, msg.Error.Data.Kind, msg.Error.Message)
		default:
			if result != nil {
				return json.Unmarshal(msg.Result, result)
			}
			return nil
		}
	}
}
