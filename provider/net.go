package provider

import (
	"context"
	"errors"
	"io"
)

// Relayer is the optional ability to carry network connections through
// execs: the resident's port forwards and egress proxy are built on it, so
// they work wherever an exec with stdin and stdout works, with the
// sandbox's own network "none", on a remote engine too. Each method
// returns the argv of a command inside the sandbox; the resident runs it
// with Exec (Stdin set) and carries one connection over its stdin and
// stdout. A provider announces capabilities port_forward and egress only
// when it implements this and every exec of a sandbox shares one network
// namespace (a server one exec starts is reachable from the next).
type Relayer interface {
	// RelayCommand connects to 127.0.0.1:port inside the sandbox and
	// copies stdin to the socket and the socket to stdout; stdin's end
	// half-closes the socket, and the command exits when the socket's
	// side ends (or it cannot connect, saying why on stderr).
	RelayCommand(port int) []string
	// ProxyCommand is the sandbox's egress proxy listening on listen
	// (keeperproto.CmdProxy's line protocol on stdin and stdout).
	ProxyCommand(listen string) []string
	// AttachCommand joins the proxy's held connection id to stdin and
	// stdout, as RelayCommand does a port.
	AttachCommand(id string) []string
}

// ProxyEvent is a line ProxyCommand writes on stdout. The first is Ready
// (it listens) or Error (it cannot); each later one asks the resident to
// dial Host:Port for the held connection ID.
type ProxyEvent struct {
	Ready bool   `json:"ready,omitempty"`
	Error string `json:"error,omitempty"`
	ID    string `json:"id,omitempty"`
	Host  string `json:"host,omitempty"`
	Port  int    `json:"port,omitempty"`
}

// ProxyVerdict is a line the resident writes on ProxyCommand's stdin when it
// will not carry connection ID: the proxy answers its client 403 with
// Refusal and closes. An allowed connection gets no verdict; its
// AttachCommand arrives instead.
type ProxyVerdict struct {
	ID      string `json:"id"`
	Refusal string `json:"refusal"`
}

// Dialer is an optional shortcut beside Relayer: a provider that can open a
// connection to 127.0.0.1:port inside a sandbox without an exec (local as
// root: from the resident's own process, in the sandbox's network
// namespace entered by one thread; elsewhere a connection stream of the
// sandbox's keeper, keeperexec.Dial) lets the resident carry a forwarded
// connection with no process per connection.
// The bytes and the half-closes are those of RelayCommand. ErrNoDial says
// it cannot here (no isolation, a keeper without connection streams): the
// resident then runs the relay. Any other error is the relay's failure (the port is closed), or
// not_found or conflict for a sandbox that is gone or not running.
type Dialer interface {
	DialSandbox(ctx context.Context, sandboxID string, port int) (Conn, error)
}

// Conn is a connection a Dialer or ProxyAttacher opened: a *net.TCPConn
// or *net.UnixConn the resident's own process holds (local as root), or a
// connection stream over the sandbox's keeper channel (keeperexec.Dial:
// Docker, local without root), each with its own flow control. Either
// way the half-closes are RelayCommand's: CloseWrite ends what the sandbox
// side reads, and Read's io.EOF is its end.
type Conn interface {
	io.ReadWriteCloser
	CloseWrite() error
}

// ErrNoDial is a Dialer's "use the relay instead".
var ErrNoDial = errors.New("the provider cannot connect into this sandbox from the resident; use its relay")

// ProxyAttacher is Dialer's twin for egress: it joins the egress proxy's
// held connection id (ProxyEvent.ID) without an exec, with the bytes and
// half-closes of AttachCommand. ErrNoDial: run the attach.
type ProxyAttacher interface {
	AttachProxy(ctx context.Context, sandboxID, id string) (Conn, error)
}
