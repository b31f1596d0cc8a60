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
// ProxySocket, names the connection, then carries it over stdin and stdout
// as relay does.
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
	carryStdio(conn.(*net.UnixConn))
	return 0
}

// carry runs relay or attach: one switch line in main for both.
func carry(cmd string, args []string) int {
	if cmd == keeperproto.CmdAttach {
		return attach(args)
	}
	return relay(args)
}
