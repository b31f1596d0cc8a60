package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// maxProxyHead bounds a request's head (request line and headers).
const maxProxyHead = 64 << 10

// proxyRequest is what the proxy needs of a client's request: its target
// and, for a plain request, the head to send on. It is parsed by hand
// because net/http would double the keeper's size.
type proxyRequest struct {
	connect bool
	host    string
	port    int
	head    string // a plain request's head in origin form, blank line included
}

func readProxyRequest(br *bufio.Reader) (*proxyRequest, error) {
	line, err := readHeadLine(br, maxProxyHead)
	if err != nil {
		return nil, err
	}
	method, rest, _ := strings.Cut(line, " ")
	target, version, ok := strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(version, "HTTP/1.") {
		return nil, fmt.Errorf("not an HTTP/1 request line: %q", line)
	}
	headers, err := readHeaders(br, maxProxyHead-len(line))
	if err != nil {
		return nil, err
	}
	if method == "CONNECT" {
		host, port, err := splitTarget(target, 0)
		return &proxyRequest{connect: true, host: host, port: port}, err
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("a proxy request needs an absolute http:// URL or CONNECT, not %q", target)
	}
	host, port, err := splitTarget(u.Host, 80)
	if err != nil {
		return nil, err
	}
	var head strings.Builder
	head.WriteString(method + " " + u.RequestURI() + " " + version + "\r\n")
	for _, h := range headers {
		name, _, _ := strings.Cut(h, ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "connection", "proxy-connection", "proxy-authorization", "keep-alive":
			continue
		}
		head.WriteString(h + "\r\n")
	}
	head.WriteString("Connection: close\r\n\r\n")
	return &proxyRequest{host: host, port: port, head: head.String()}, nil
}

// splitTarget splits host:port; defaultPort 0 means the port is required.
func splitTarget(authority string, defaultPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(authority)
	if err != nil {
		if defaultPort == 0 {
			return "", 0, fmt.Errorf("CONNECT needs host:port, not %q", authority)
		}
		return strings.Trim(authority, "[]"), defaultPort, nil
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", authority)
	}
	return host, port, nil
}

func readHeaders(br *bufio.Reader, budget int) ([]string, error) {
	var headers []string
	for {
		line, err := readHeadLine(br, budget)
		if err != nil {
			return nil, err
		}
		if line == "" {
			return headers, nil
		}
		budget -= len(line)
		headers = append(headers, line)
	}
}

var errHeadTooLarge = errors.New("request head too large")

// readHeadLine reads one CRLF- or LF-ended line of at most budget bytes.
func readHeadLine(br *bufio.Reader, budget int) (string, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > budget {
			return "", errHeadTooLarge
		}
		if err == nil {
			return strings.TrimRight(string(line), "\r\n"), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
}
