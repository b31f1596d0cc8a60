package provider

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
