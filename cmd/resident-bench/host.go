package main

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resident-dev/resident/protocol"
)

// residentProc is the host side of one resident child over its stdio: it
// frames requests, matches responses by id and counts the payload bytes of
// exec/output and store/data notifications without decoding them (the
// length of base64 text gives the decoded length), so the host's own work
// stays out of the figure.
type residentProc struct {
	pid     int
	wait    func() error // the child's (or the in-process session's) end
	kill    func()
	in      io.WriteCloser
	writeMu sync.Mutex
	wbuf    []byte
	nextID  atomic.Int64
	mu      sync.Mutex
	waiting map[int64]chan response
	payload atomic.Int64 // decoded bytes of exec/output and store/data
	chunks  atomic.Int64 // exec/output and store/data notifications
	readErr chan error
}

type response struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	ID *int64 `json:"id"`
}

// spawnResident starts the binary with a minimal environment: the Docker
// variables, PATH and HOME, and nothing else.
func spawnResident(bin, providerName, stateDir string, extra ...string) (*residentProc, error) {
	level := "error"
	if residentLog != nil {
		level = "debug"
	}
	cmd := exec.Command(bin, append([]string{"--provider", providerName, "--state-dir", stateDir, "--log-level", level}, extra...)...)
	cmd.Env = allowedEnv()
	return spawnHosted(cmd)
}

// residentLog, set by --resident-log, takes the stderr (debug logs) of
// every resident the bench starts: for tracing a figure, which it slows.
var residentLog io.Writer

// spawnEcho starts the process-hop floor (internal/echo) as a host would
// start a resident.
func spawnEcho(bin string) (*residentProc, error) { return spawnHosted(exec.Command(bin)) }

// spawnHosted starts cmd with its stdio as a host's channel to it.
func spawnHosted(cmd *exec.Cmd) (*residentProc, error) {
	cmd.Stderr = io.Discard
	if residentLog != nil {
		cmd.Stderr = residentLog
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return newResidentProc(cmd.Process.Pid, in, out, cmd.Wait, func() { _ = cmd.Process.Kill() }), nil
}

func newResidentProc(pid int, in io.WriteCloser, out io.Reader, wait func() error, kill func()) *residentProc {
	p := &residentProc{pid: pid, in: in, wait: wait, kill: kill, waiting: map[int64]chan response{}, readErr: make(chan error, 1)}
	go p.readLoop(protocol.NewFrameReader(out, 1<<30))
	return p
}

func allowedEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "DOCKER_HOST", "DOCKER_API_VERSION", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH", "KUBECONFIG", "TMPDIR", "GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

var dataKey = []byte(`"data":"`)

// readLoop reads every frame into one buffer, reused (a response's result
// is copied out by its decoding): the host's allocations stay out of the
// figures.
func (p *residentProc) readLoop(fr *protocol.FrameReader) {
	var buf []byte
	for {
		n, err := fr.ReadHeader()
		var body []byte
		if err == nil {
			body, err = fr.ReadBodyInto(buf, n)
			buf = body
		}
		if err != nil {
			p.readErr <- err
			p.mu.Lock()
			for id, ch := range p.waiting {
				close(ch)
				delete(p.waiting, id)
			}
			p.mu.Unlock()
			return
		}
		if bytes.HasPrefix(body, []byte(`{"jsonrpc":"2.0","method":`)) {
			if i := bytes.Index(body, dataKey); i >= 0 {
				b64 := body[i+len(dataKey):]
				if j := bytes.IndexByte(b64, '"'); j >= 0 {
					b64 = b64[:j]
					n := len(b64) / 4 * 3
					n -= bytes.Count(b64[max(0, len(b64)-2):], []byte("="))
					p.payload.Add(int64(n))
					p.chunks.Add(1)
				}
			}
			continue
		}
		var r response
		if err := json.Unmarshal(body, &r); err != nil || r.ID == nil {
			continue
		}
		p.mu.Lock()
		ch := p.waiting[*r.ID]
		delete(p.waiting, *r.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// send writes one request and returns the channel its response arrives on.
func (p *residentProc) send(method string, params any) (<-chan response, error) {
	id := p.nextID.Add(1)
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"` + method + `","params":` + string(raw) + `}`
	ch := make(chan response, 1)
	p.mu.Lock()
	p.waiting[id] = ch
	p.mu.Unlock()
	p.writeMu.Lock()
	p.wbuf = protocol.AppendFrame(p.wbuf[:0], []byte(body))
	_, err = p.in.Write(p.wbuf)
	p.writeMu.Unlock()
	return ch, err
}

// sendData writes one request whose params end in a base64 "data" member,
// encoding data straight into the frame buffer, as a lean host does (and as
// the resident writes its output): head is the params' JSON before the
// data, without the opening brace, e.g. `"stream_id":"u1","eof":false`.
// The host's own work then stays out of the upload figure, as the raw
// side's tar writer stays out of its own.
func (p *residentProc) sendData(method, head string, data []byte) (<-chan response, error) {
	id := p.nextID.Add(1)
	prefix := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"` + method + `","params":{` + head + `,"data":"`
	const suffix = `"}}`
	ch := make(chan response, 1)
	p.mu.Lock()
	p.waiting[id] = ch
	p.mu.Unlock()
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.wbuf = protocol.AppendFrameHeader(p.wbuf[:0], len(prefix)+base64.StdEncoding.EncodedLen(len(data))+len(suffix))
	p.wbuf = append(p.wbuf, prefix...)
	p.wbuf = protocol.AppendBase64(p.wbuf, data) // the resident's own encoder: the standard library's bytes, twice as fast
	p.wbuf = append(p.wbuf, suffix...)
	_, err := p.in.Write(p.wbuf)
	return ch, err
}

// call sends a request and waits for its result.
func (p *residentProc) call(method string, params any, result any) error {
	ch, err := p.send(method, params)
	if err != nil {
		return err
	}
	return awaitResult(method, ch, result)
}

func awaitResult(method string, ch <-chan response, result any) error {
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: the resident closed its stdout", method)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("%s: no answer in 10 minutes", method)
	}
}

func (p *residentProc) initialize(installID string, credentials map[string]string) error {
	return p.call("initialize", map[string]any{"protocol_version": 1, "install_id": installID, "tag_prefix": tagPrefix, "credentials": credentials}, nil)
}

func (p *residentProc) createSandbox(spec map[string]any) (string, error) {
	var res struct {
		SandboxID string `json:"sandbox_id"`
	}
	err := p.call("sandbox/create", map[string]any{"spec": spec, "tags": map[string]string{"bench": "1"}}, &res)
	return res.SandboxID, err
}

var execSeq atomic.Int64

func execParams(sandbox string, argv ...string) map[string]any {
	return map[string]any{"sandbox_id": sandbox, "argv": argv, "exec_id": "b" + strconv.FormatInt(execSeq.Add(1), 10)}
}

func (p *residentProc) exec(sandbox string, argv ...string) error {
	var res struct {
		ExitCode int `json:"exit_code"`
	}
	if err := p.call("sandbox/exec", execParams(sandbox, argv...), &res); err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("exec %s: exit %d", strings.Join(argv, " "), res.ExitCode)
	}
	return nil
}

// stop closes stdin (a clean shutdown) and waits for the exit.
func (p *residentProc) stop() error {
	_ = p.in.Close()
	done := make(chan error, 1)
	go func() { done <- p.wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		p.kill()
		return errors.New("resident did not exit within 10s of stdin EOF")
	}
}

// procStatusKB reads a field of /proc/<pid>/status (VmRSS, VmHWM) in KiB.
func procStatusKB(pid int, field string) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// cpuTime is the user+system CPU time a process has used so far.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: utime and stime are the 12th and 13th.
	rest := string(data[bytes.LastIndexByte(data, ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond, nil
}

// cpuTimeWithChildren is cpuTime with the CPU of the children pid has
// reaped (dockerd's archive helpers, docker-untar).
func cpuTimeWithChildren(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	if len(f) < 15 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100, nil
}

// tarPayload counts the file bytes of a tar stream.
func tarPayload(r io.Reader) (int64, error) {
	tr := tar.NewReader(r)
	var total int64
	for {
		_, err := tr.Next()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		n, err := io.Copy(io.Discard, tr)
		total += n
		if err != nil {
			return total, err
		}
	}
}
