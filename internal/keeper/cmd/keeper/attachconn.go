package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// attach hands the proxy's held connection ID to this exec: it connects to
// ProxySocket, names the connection, then carries it over stdin and stdout.
// Unlike relay it exits only once both directions have ended: here the
// sandbox's side is the client, and a client that half-closes after its
// request still reads the answer (the resident cannot see the half-close,
// the exec's stdout being the keeper's too, so the upstream side does not
// see it either; it ends the connection when it has answered).
func attach(args []string) int {
	fs := flag.NewFlagSet("attach", flag.ContinueOnError)
	id := fs.String("id", "", "the held connection's id")
	if err := fs.Parse(args); err != nil || *id == "" {
		fmt.Fprintln(os.Stderr, "keeper attach: -id is required")
		return 2
	}
	conn, err := net.Dial("unix", keeperproto.ProxySocket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keeper attach: "+err.Error())
		return 1
	}
	if _, err := io.WriteString(conn, *id+"\n"); err != nil {
		return 1
	}
	uc := conn.(*net.UnixConn)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		_, _ = io.Copy(uc, os.Stdin)
		_ = uc.CloseWrite()
	}()
	_, _ = io.Copy(os.Stdout, uc)
	<-sent
	return 0
}

// carry runs relay or attach: one switch line in main for both.
func carry(cmd string, args []string) int {
	if cmd == keeperproto.CmdAttach {
		return attach(args)
	}
	return relay(args)
}
