package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/resident-dev/resident/internal/testhost"
	"github.com/resident-dev/resident/protocol"
)

// waitLimit bounds every wait in a script, so a hang fails with a message
// instead of stalling the suite; it is not a performance assertion.
const waitLimit = 60 * time.Second

type sessions struct {
	mu   sync.Mutex
	list []*session
}

func (s *sessions) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.list {
		if sess.cmd.Process != nil {
			_ = sess.cmd.Process.Kill()
		}
	}
}

// session is one running resident and what it has said so far.
type session struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *lockedBuffer
	stdout *lockedBuffer
	nextID int
	names  map[string]string // script label -> request id
	exited chan struct{}
	exit   int

	mu        sync.Mutex
	cond      *sync.Cond
	responses map[string]json.RawMessage
	notes     []note
	readErr   error
}

type note struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type lockedBuffer = testhost.SyncBuffer

func current(ts *testscript.TestScript) *session {
	all := ts.Value("rpc").(*sessions)
	all.mu.Lock()
	defer all.mu.Unlock()
	if len(all.list) == 0 {
		ts.Fatalf("rpc: no session; use rpc start")
	}
	return all.list[len(all.list)-1]
}

func cmdRPC(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: rpc SUBCOMMAND ...")
	}
	if neg && args[0] != "exit" {
		ts.Fatalf("rpc %s does not support !", args[0])
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "start":
		start(ts, rest)
	case "call":
		s := current(ts)
		id := s.send(ts, rest)
		printResponse(ts, s.await(ts, id))
	case "send":
		s := current(ts)
		if len(rest) < 2 {
			ts.Fatalf("usage: rpc send NAME METHOD [JSON]")
		}
		s.names[rest[0]] = s.send(ts, rest[1:])
	case "await":
		s := current(ts)
		id, ok := s.names[rest[0]]
		if !ok {
			ts.Fatalf("rpc await: no request named %s", rest[0])
		}
		printResponse(ts, s.await(ts, id))
	case "cancel":
		s := current(ts)
		id, ok := s.names[rest[0]]
		if !ok {
			ts.Fatalf("rpc cancel: no request named %s", rest[0])
		}
		s.write(ts, message(ts, "", []string{protocol.MethodCancelRequest, `{"id":` + id + `}`}))
	case "notify":
		s := current(ts)
		s.write(ts, message(ts, "", rest))
	case "raw":
		text := strings.NewReplacer(`\r`, "\r", `\n`, "\n").Replace(strings.Join(rest, " "))
		_, err := io.WriteString(current(ts).stdin, expand(ts, text))
		ts.Check(err)
	case "output":
		ts.Stdout().Write([]byte(current(ts).output(rest[0], rest[1])))
	case "notes":
		for _, n := range current(ts).notifications(rest[0]) {
			fmt.Fprintf(ts.Stdout(), "%s\n", n)
		}
	case "close":
		s := current(ts)
		_ = s.stdin.Close()
		s.waitExit(ts)
	case "kill":
		s := current(ts)
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		s.waitExit(ts)
	case "exit":
		s := current(ts)
		s.waitExit(ts)
		want, err := strconv.Atoi(rest[0])
		ts.Check(err)
		if (s.exit == want) == neg {
			ts.Fatalf("resident exit code %d, want %s%d\nstderr:\n%s", s.exit, map[bool]string{true: "not ", false: ""}[neg], want, s.stderr.String())
		}
	case "pid": // RESIDENT_PID: the current resident's pid, for host-side checks
		ts.Setenv("RESIDENT_PID", strconv.Itoa(current(ts).cmd.Process.Pid))
	case "stderr":
		ts.Stdout().Write([]byte(current(ts).stderr.String()))
	case "stdout":
		ts.Stdout().Write([]byte(current(ts).stdout.String()))
	default:
		ts.Fatalf("rpc: unknown subcommand %s", sub)
	}
}

func start(ts *testscript.TestScript, flags []string) {
	state := filepath.Join(ts.Getenv("WORK"), "state")
	ts.Defer(func() { testhost.EndLocalInits(state) })
	args := []string{"--state-dir", state, "--log-level", "debug"}
	if !slices.Contains(flags, "--provider") && ts.Getenv("PROVIDER") != "" {
		args = append(args, "--provider", ts.Getenv("PROVIDER"))
	}
	args = append(args, flags...)
	cmd := exec.Command(ts.Getenv("RESIDENT"), args...)
	cmd.Env = []string{"PATH=" + ts.Getenv("PATH"), "HOME=" + ts.Getenv("HOME"), "TMPDIR=" + ts.Getenv("TMPDIR"),
		"RESIDENT_SECRET_CANARY=" + ts.Getenv("RESIDENT_SECRET_CANARY"),
		// The same canary under docker's secret prefix, so that a session
		// checks the env canary on either provider.
		"REGISTRY_TOKEN_CANARY=" + ts.Getenv("RESIDENT_SECRET_CANARY"), "DOCKER_HOST=" + ts.Getenv("DOCKER_HOST")}
	stdin, err := cmd.StdinPipe()
	ts.Check(err)
	stdout, err := cmd.StdoutPipe()
	ts.Check(err)
	s := &session{cmd: cmd, stdin: stdin, stderr: &lockedBuffer{}, stdout: &lockedBuffer{}, names: map[string]string{},
		exited: make(chan struct{}), responses: map[string]json.RawMessage{}}
	s.cond = sync.NewCond(&s.mu)
	cmd.Stderr = s.stderr
	ts.Check(cmd.Start())
	all := ts.Value("rpc").(*sessions)
	all.mu.Lock()
	all.list = append(all.list, s)
	all.mu.Unlock()
	go s.readLoop(io.TeeReader(stdout, s.stdout))
	go func() {
		err := cmd.Wait()
		s.exit = cmd.ProcessState.ExitCode()
		if err != nil && s.exit < 0 {
			s.exit = 128 + int(cmd.ProcessState.Sys().(syscall.WaitStatus).Signal())
		}
		close(s.exited)
	}()
}

func (s *session) readLoop(r io.Reader) {
	fr := protocol.NewFrameReader(r, 1<<30)
	for {
		body, err := fr.Read()
		s.mu.Lock()
		if err != nil {
			s.readErr = err
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if jerr := json.Unmarshal(body, &m); jerr != nil {
			s.readErr = fmt.Errorf("resident wrote a frame that is not JSON: %q", body)
		} else if m.Method != "" {
			s.notes = append(s.notes, note{Method: m.Method, Params: m.Params})
		} else {
			s.responses[string(m.ID)] = body
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// message builds a request (id set) or notification frame body from
// METHOD [JSON], expanding $VARS in the JSON.
func message(ts *testscript.TestScript, id string, args []string) []byte {
	if len(args) == 0 || len(args) > 2 {
		ts.Fatalf("want METHOD [JSON], got %q", args)
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": args[0]}
	if id != "" {
		msg["id"] = json.RawMessage(id)
	}
	if len(args) == 2 {
		raw := json.RawMessage(expand(ts, args[1]))
		if !json.Valid(raw) {
			ts.Fatalf("params are not JSON: %s", raw)
		}
		msg["params"] = raw
	}
	body, err := json.Marshal(msg)
	ts.Check(err)
	return body
}

func (s *session) send(ts *testscript.TestScript, args []string) string {
	s.nextID++
	id := strconv.Itoa(s.nextID)
	s.write(ts, message(ts, id, args))
	return id
}

func (s *session) write(ts *testscript.TestScript, body []byte) {
	_, err := s.stdin.Write(protocol.AppendFrame(nil, body))
	ts.Check(err)
}

func (s *session) await(ts *testscript.TestScript, id string) json.RawMessage {
	timer := time.AfterFunc(waitLimit, func() {
		s.mu.Lock()
		if s.readErr == nil {
			s.readErr = fmt.Errorf("no response within %s", waitLimit)
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if body, ok := s.responses[id]; ok {
			return body
		}
		if s.readErr != nil {
			ts.Fatalf("awaiting response %s: %v\nstderr:\n%s", id, s.readErr, s.stderr.String())
		}
		s.cond.Wait()
	}
}

// printResponse prints a response without its id and jsonrpc members, keys
// sorted, and exports each string field of the result as $RESULT_<field>.
func printResponse(ts *testscript.TestScript, body json.RawMessage) {
	var m map[string]json.RawMessage
	ts.Check(json.Unmarshal(body, &m))
	delete(m, "id")
	delete(m, "jsonrpc")
	out, err := json.Marshal(m)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%s\n", out)
	var result map[string]any
	if json.Unmarshal(m["result"], &result) == nil {
		for k, v := range result {
			if str, ok := v.(string); ok {
				ts.Setenv("RESULT_"+k, str)
			}
		}
	}
}

func (s *session) output(execID, stream string) string {
	var out strings.Builder
	for _, n := range s.notifications(protocol.NotifyExecOutput) {
		var o protocol.ExecOutput
		if json.Unmarshal([]byte(n), &o) == nil && o.ExecID == execID && o.Stream == stream {
			out.Write(o.Data)
		}
	}
	return out.String()
}

// notifications returns the params of each notification of method, as sorted-key JSON.
func (s *session) notifications(method string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range s.notes {
		if n.Method == method {
			var v any
			_ = json.Unmarshal(n.Params, &v)
			b, _ := json.Marshal(v)
			out = append(out, string(b))
		}
	}
	return out
}

func (s *session) waitExit(ts *testscript.TestScript) {
	select {
	case <-s.exited:
	case <-time.After(waitLimit):
		ts.Fatalf("the resident did not exit within %s", waitLimit)
	}
}

var scriptVar = regexp.MustCompile(`\$\$|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expand substitutes $NAME for variables the script has set and $$ for a
// literal $; any other $word reaches the resident untouched, so shell text
// like $i or $PPID in argv needs no escaping.
func expand(ts *testscript.TestScript, text string) string {
	return scriptVar.ReplaceAllStringFunc(text, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v := ts.Getenv(m[1:]); v != "" {
			return v
		}
		return m
	})
}
