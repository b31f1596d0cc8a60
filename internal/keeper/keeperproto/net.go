package keeperproto

// Subcommands that carry network connections between a sandbox and the
// resident, each over one exec's stdin and stdout (argv[1]). Every
// connection is an exec of its own, so each has the exec's own flow
// control: a reader that stalls holds back only its own exec.
const (
	// relay -port N: connect to 127.0.0.1:N inside the sandbox, copy stdin
	// to the socket and the socket to stdout, half-closing each way.
	CmdRelay = "relay"
	// proxy -listen ADDR: the sandbox's egress proxy (HTTP CONNECT and
	// plain HTTP). It writes one ProxyEvent per line on stdout and reads
	// one ProxyVerdict per line on stdin.
	CmdProxy = "proxy"
	// attach -id ID: join the connection the proxy holds as ID to this
	// exec's stdin and stdout (the resident's side has dialled it).
	CmdAttach = "attach"
)

// ProxySocket is the abstract unix socket on which the proxy hands its
// held connections to attach. A process of the sandbox may connect to it
// too, but it learns nothing and gets nothing without a connection's id,
// which only the proxy and the resident see.
const ProxySocket = "@resident-egress-proxy"

// ProxyEvent and ProxyVerdict are provider.ProxyEvent and
// provider.ProxyVerdict, which the resident reads and writes (it may not
// import the keeper); a test in provider/docker keeps them the same.
//
// ProxyEvent is a line the proxy writes on stdout. The first is Ready
// (listening) or Error (it cannot listen); each later one asks the
// resident to dial Host:Port for the connection ID.
type ProxyEvent struct {
	Ready bool   `json:"ready,omitempty"`
	Error string `json:"error,omitempty"`
	ID    string `json:"id,omitempty"`
	Host  string `json:"host,omitempty"`
	Port  int    `json:"port,omitempty"`
}

// ProxyVerdict is a line the resident writes on the proxy's stdin when it
// will not carry connection ID: the proxy answers the client 403 with
// Refusal as the body and closes. An allowed connection has no verdict:
// its attach arrives instead.
type ProxyVerdict struct {
	ID      string `json:"id"`
	Refusal string `json:"refusal"`
}
