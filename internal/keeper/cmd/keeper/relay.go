package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
)

// relay carries one forwarded connection: it connects to 127.0.0.1:port
// inside the sandbox and copies stdin to the socket and the socket to
// stdout. Each direction ends on its own (a half-close), so a client that
// has sent its whole request still reads the whole answer; the relay exits
// when both have ended.
func relay(args []string) int {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	port := fs.Int("port", 0, "the port inside the sandbox")
	if err := fs.Parse(args); err != nil || *port <= 0 || *port > 65535 {
		fmt.Fprintln(os.Stderr, "keeper relay: -port must be 1..65535")
		return 2
	}
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "keeper relay: "+err.Error())
		return 1
	}
	carryStdio(conn.(*net.TCPConn))
	return 0
}

// halfCloser is a connection whose sending side closes on its own.
type halfCloser interface {
	io.ReadWriter
	CloseWrite() error
}

// carryStdio carries conn over this exec's stdin and stdout: stdin's end
// half-closes conn, so a client that has sent its whole request still reads
// the whole answer. It returns when conn's side ends, and the exec with it:
// the exec's stdout is also the keeper's, so only the exec's end tells the
// resident that this direction is over. A server that half-closes and goes
// on reading loses what follows; a client that half-closes loses nothing.
func carryStdio(conn halfCloser) {
	go func() {
		_, _ = io.Copy(conn, os.Stdin)
		_ = conn.CloseWrite()
	}()
	_, _ = io.Copy(os.Stdout, conn)
}

// pipeHalves joins two connections until both directions end, passing each
// half-close on.
func pipeHalves(a, b halfCloser) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(a, b)
		_ = a.CloseWrite()
	}()
	_, _ = io.Copy(b, a)
	_ = b.CloseWrite()
	wg.Wait()
}
