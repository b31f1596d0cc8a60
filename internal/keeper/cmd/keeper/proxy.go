package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// proxyWait bounds how long a client waits for the resident's answer (an
// attach or a refusal) before it is told 504.
const proxyWait = 60 * time.Second

// proxy is the sandbox's egress proxy. It never dials anything itself (the
// sandbox has no network): for each client it reads the request's target,
// asks the resident on stdout, and either gets the connection the resident
// dialled, as an attach on ProxySocket, or a refusal on stdin.
func proxy(args []string) int {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:3128", "where sandbox clients reach the proxy")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	p := &egressProxy{pending: map[string]*heldConn{}, out: json.NewEncoder(os.Stdout)}
	clients, err := net.Listen("tcp", *listen)
	if err != nil {
		p.emit(keeperproto.ProxyEvent{Error: err.Error()})
		return 1
	}
	attaches, err := net.Listen("unix", keeperproto.ProxySocket)
	if err != nil {
		p.emit(keeperproto.ProxyEvent{Error: err.Error()})
		return 1
	}
	p.emit(keeperproto.ProxyEvent{Ready: true})
	go p.readVerdicts(os.Stdin)
	go p.serveAttaches(attaches)
	for {
		c, err := clients.Accept()
		if err != nil {
			return 1
		}
		go p.serveClient(c.(*net.TCPConn))
	}
}

type egressProxy struct {
	mu      sync.Mutex
	pending map[string]*heldConn
	outMu   sync.Mutex
	out     *json.Encoder
}

// heldConn is a client waiting for the resident's answer.
type heldConn struct {
	client  *net.TCPConn
	br      *bufio.Reader
	req     *proxyRequest
	answer  chan net.Conn // the attach, or nil for a refusal
	refusal string
}

func (p *egressProxy) emit(ev keeperproto.ProxyEvent) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	_ = p.out.Encode(ev)
}

// readVerdicts ends the proxy when stdin ends: the resident is gone, and
// with it every way out.
func (p *egressProxy) readVerdicts(in io.Reader) {
	dec := json.NewDecoder(in)
	for {
		var v keeperproto.ProxyVerdict
		if err := dec.Decode(&v); err != nil {
			os.Exit(0)
		}
		if h := p.take(v.ID); h != nil {
			h.refusal = v.Refusal
			h.answer <- nil
		}
	}
}

func (p *egressProxy) serveAttaches(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			id, err := readIDLine(c)
			h := p.take(id)
			if err != nil || h == nil {
				_ = c.Close()
				return
			}
			h.answer <- c
		}()
	}
}

func (p *egressProxy) take(id string) *heldConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.pending[id]
	delete(p.pending, id)
	return h
}

func (p *egressProxy) serveClient(c *net.TCPConn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := readProxyRequest(br)
	if err != nil {
		proxyAnswer(c, 400, err.Error())
		return
	}
	host, port := req.host, req.port
	h := &heldConn{client: c, br: br, req: req, answer: make(chan net.Conn, 1)}
	id := newConnID()
	p.mu.Lock()
	p.pending[id] = h
	p.mu.Unlock()
	p.emit(keeperproto.ProxyEvent{ID: id, Host: host, Port: port})
	var up net.Conn
	select {
	case up = <-h.answer:
	case <-time.After(proxyWait):
		if p.take(id) != nil {
			proxyAnswer(c, 504, "the resident did not answer")
			return
		}
		up = <-h.answer // taken in the race: the answer is on its way
	}
	if up == nil {
		proxyAnswer(c, 403, h.refusal)
		return
	}
	defer up.Close()
	h.carry(up.(*net.UnixConn))
}

// carry joins the client to the dialled connection: a CONNECT is told 200
// and becomes a tunnel; a plain request goes on in origin form with
// "Connection: close", so the origin ends the connection after answering
// and no later request on it can reach another host.
func (h *heldConn) carry(up *net.UnixConn) {
	if h.req.connect {
		_, _ = io.WriteString(h.client, "HTTP/1.1 200 Connection established\r\n\r\n")
	} else if _, err := io.WriteString(up, h.req.head); err != nil {
		return
	}
	pipeHalves(up, bufferedConn{h.client, h.br})
}

var statusText = map[int]string{400: "Bad Request", 403: "Forbidden", 504: "Gateway Timeout"}

func proxyAnswer(c net.Conn, code int, msg string) {
	body := "resident egress: " + msg + "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, statusText[code], len(body), body)
}

func newConnID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// readIDLine reads an attach's first line, the held connection's id, a
// byte at a time: what follows it is the upstream's first bytes, which
// the attach may send in the same segment, and a buffered reader would
// swallow them.
func readIDLine(r io.Reader) (string, error) {
	var line []byte
	var b [1]byte
	for len(line) < 64 {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		if b[0] == '\n' {
			return string(line), nil
		}
		line = append(line, b[0])
	}
	return "", errors.New("attach: the id line is too long")
}

// bufferedConn reads what the request's reader already buffered first. It
// embeds nothing: a promoted WriteTo would let io.Copy read the socket
// past the buffer.
type bufferedConn struct {
	conn *net.TCPConn
	br   *bufio.Reader
}

func (c bufferedConn) Read(p []byte) (int, error)  { return c.br.Read(p) }
func (c bufferedConn) Write(p []byte) (int, error) { return c.conn.Write(p) }
func (c bufferedConn) CloseWrite() error           { return c.conn.CloseWrite() }
