package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// rawClient is the floor: the least Engine API work an operation needs,
// over the same unix socket the resident uses, with no SDK in between.
type rawClient struct {
	sock string
	hc   *http.Client
}

const apiPrefix = "http://docker/v1.41"

func newRawClient(sock string) *rawClient {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	tr := &http.Transport{DialContext: dial, MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true}
	return &rawClient{sock: sock, hc: &http.Client{Transport: tr}}
}

// do sends one request and returns the status and body.
func (r *rawClient) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, apiPrefix+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

func (r *rawClient) want(method, path string, body any, ok ...int) ([]byte, error) {
	status, data, err := r.do(method, path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	for _, code := range ok {
		if status == code {
			return data, nil
		}
	}
	return nil, fmt.Errorf("%s %s: %d %s", method, path, status, strings.TrimSpace(string(data)))
}

func (r *rawClient) ping() error {
	_, err := r.want("GET", "/_ping", nil, 200)
	return err
}

// list is list_owned's one engine call: containers by exact label match,
// decoded into just the fields a listing needs.
func (r *rawClient) list(labels ...string) error {
	f, _ := json.Marshal(map[string][]string{"label": labels})
	data, err := r.want("GET", "/containers/json?all=1&filters="+url.QueryEscape(string(f)), nil, 200)
	if err != nil {
		return err
	}
	var list []struct {
		Id, Image, State string
		Created          int64
		Labels           map[string]string
	}
	return json.Unmarshal(data, &list)
}

// inspect is read_owner's (and a missing id's terminate's) one engine call,
// decoded into just the labels and state.
func (r *rawClient) inspect(id string) (int, error) {
	status, data, err := r.do("GET", "/containers/"+id+"/json", nil)
	if err != nil || status != 200 {
		return status, err
	}
	var c struct {
		Id     string
		Config struct{ Labels map[string]string }
		State  struct{ Running bool }
	}
	return status, json.Unmarshal(data, &c)
}

// runContainer creates and starts a container that stays up.
func (r *rawClient) runContainer(image string, labels map[string]string, cmd []string, mounts []map[string]any, start bool) (string, error) {
	body := map[string]any{"Image": image, "Cmd": cmd, "Labels": labels,
		"HostConfig": map[string]any{"NetworkMode": "none", "Mounts": mounts}}
	data, err := r.want("POST", "/containers/create", body, 201)
	if err != nil {
		return "", err
	}
	var created struct{ Id string }
	if err := json.Unmarshal(data, &created); err != nil {
		return "", err
	}
	if start {
		if _, err := r.want("POST", "/containers/"+created.Id+"/start", nil, 204); err != nil {
			return created.Id, err
		}
	}
	return created.Id, nil
}

func (r *rawClient) remove(id string) error {
	_, err := r.want("DELETE", "/containers/"+id+"?force=1&v=1", nil, 204, 404)
	return err
}

func (r *rawClient) wait(id string) error {
	_, err := r.want("POST", "/containers/"+id+"/wait", nil, 200)
	return err
}

// exec is exec create, a hijacked start read to EOF (demultiplexed, payload
// counted), and one inspect for the exit code.
func (r *rawClient) exec(id string, argv []string) (exit int, payload int64, err error) {
	return r.execAttached(id, argv, false)
}

// execAttached is exec with the exec's stdin attached and held open until
// the stream ends, as the docker provider holds the keeper's control stream.
func (r *rawClient) execAttached(id string, argv []string, stdin bool) (exit int, payload int64, err error) {
	data, err := r.want("POST", "/containers/"+id+"/exec", map[string]any{"Cmd": argv, "AttachStdin": stdin, "AttachStdout": true, "AttachStderr": true}, 201)
	if err != nil {
		return 0, 0, err
	}
	var created struct{ Id string }
	if err := json.Unmarshal(data, &created); err != nil {
		return 0, 0, err
	}
	body, err := r.hijack("/exec/"+created.Id+"/start", `{"Detach":false,"Tty":false}`)
	if err != nil {
		return 0, 0, err
	}
	payload, err = demuxCount(body)
	body.Close()
	if err != nil {
		return 0, payload, err
	}
	data, err = r.want("GET", "/exec/"+created.Id+"/json", nil, 200)
	if err != nil {
		return 0, payload, err
	}
	var ins struct{ ExitCode int }
	err = json.Unmarshal(data, &ins)
	return ins.ExitCode, payload, err
}

// execLag runs argv like exec and then polls the exec's state every
// 200 µs: it returns how long after the end of the stream the engine still
// reported the exec running. A client that learns the exit from the exec
// state, as the docker provider does, waits at least this long.
func (r *rawClient) execLag(id string, argv []string) (time.Duration, error) {
	data, err := r.want("POST", "/containers/"+id+"/exec", map[string]any{"Cmd": argv, "AttachStdout": true, "AttachStderr": true}, 201)
	if err != nil {
		return 0, err
	}
	var created struct{ Id string }
	if err := json.Unmarshal(data, &created); err != nil {
		return 0, err
	}
	body, err := r.hijack("/exec/"+created.Id+"/start", `{"Detach":false,"Tty":false}`)
	if err != nil {
		return 0, err
	}
	_, err = demuxCount(body)
	body.Close()
	if err != nil {
		return 0, err
	}
	eof := time.Now()
	for {
		data, err := r.want("GET", "/exec/"+created.Id+"/json", nil, 200)
		if err != nil {
			return 0, err
		}
		var ins struct{ Running bool }
		if err := json.Unmarshal(data, &ins); err != nil {
			return 0, err
		}
		if !ins.Running {
			return time.Since(eof), nil
		}
		time.Sleep(200 * time.Microsecond)
	}
}

type hijacked struct {
	*bufio.Reader
	net.Conn
}

func (h hijacked) Read(b []byte) (int, error) { return h.Reader.Read(b) }

// hijack POSTs with the upgrade headers the engine wants for an attached
// stream and returns the raw connection after the response head.
func (r *rawClient) hijack(path, body string) (io.ReadCloser, error) {
	conn, err := net.DialTimeout("unix", r.sock, 10*time.Second)
	if err != nil {
		return nil, err
	}
	head := "POST /v1.41" + path + " HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
	if _, err := io.WriteString(conn, head); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, fmt.Errorf("POST %s: %s", path, resp.Status)
	}
	return hijacked{br, conn}, nil
}

// demuxCount reads the engine's multiplexed stream to EOF and counts the
// payload bytes: an 8-byte header (stream, 0, 0, 0, big-endian size), then
// size bytes.
func demuxCount(r io.Reader) (int64, error) {
	var hdr [8]byte
	var total int64
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return total, nil
			}
			return total, err
		}
		n := int64(binary.BigEndian.Uint32(hdr[4:]))
		if _, err := io.CopyN(io.Discard, r, n); err != nil {
			return total, err
		}
		total += n
	}
}

// archiveCount streams a path out of a container as the engine's tar and
// counts the file bytes.
func (r *rawClient) archiveCount(id, path string) (int64, error) {
	resp, err := r.hc.Get(apiPrefix + "/containers/" + id + "/archive?path=" + url.QueryEscape(path))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("archive %s: %s", path, resp.Status)
	}
	return tarPayload(resp.Body)
}

func labelFilter(label string) string {
	f, _ := json.Marshal(map[string][]string{"label": {label}})
	return url.QueryEscape(string(f))
}

func containerIDs(listJSON []byte) []string {
	var list []struct{ Id string }
	_ = json.Unmarshal(listJSON, &list)
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.Id)
	}
	return ids
}

// awaitWaiting polls the sandbox's process list until n shells wait at
// gate (their command line names it; the keepers above them are not
// counted), unless ended says the execs are over (an exec that failed).
func (r *rawClient) awaitWaiting(id, gate string, n int, ended func() bool) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		data, err := r.want("GET", "/containers/"+id+"/top", nil, 200)
		if err != nil {
			return err
		}
		var top struct{ Processes [][]string }
		if err := json.Unmarshal(data, &top); err != nil {
			return err
		}
		waiting := 0
		for _, proc := range top.Processes {
			line := strings.Join(proc, " ")
			if strings.Contains(line, gate) && !strings.Contains(line, "keeper") {
				waiting++
			}
		}
		switch {
		case waiting >= n:
			return nil
		case ended():
			return nil // the execs' own error says why
		case time.Now().After(deadline):
			return fmt.Errorf("only %d of %d execs started within 5 minutes", waiting, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
