package protocol

// Egress opens a sandbox whose own network stays "none" to the hosts and
// ports its Allow rules name, through an HTTP(S) proxy the resident runs
// inside it (announced in HTTP_PROXY and HTTPS_PROXY). Each rule is
// "host:port" (an exact name), "*.suffix:port" (any name below suffix, not
// suffix itself) or "ip:port" ("[v6]:port"). The resident resolves names
// itself and refuses loopback, link-local, private, shared and metadata
// addresses unless an ip:port rule names that very address.
type Egress struct {
	Allow []string `json:"allow"`
}

func (Egress) keysOf() string { return "spec.egress" }

// ForwardPortParams ask for a forward of a port inside a sandbox.
type ForwardPortParams struct {
	SandboxID string `json:"sandbox_id"`
	Port      int    `json:"port"`
}

// ForwardPortResult is where the host connects: a loopback address on the
// resident's machine. Each connection to it reaches 127.0.0.1:port inside
// the sandbox until port/close, the sandbox's end, or the session's.
type ForwardPortResult struct {
	Address   string `json:"address"`
	ForwardID string `json:"forward_id"`
}

// PortCloseParams name a forward to close. Closing one that has ended is
// success, with Existed false.
type PortCloseParams struct {
	ForwardID string `json:"forward_id"`
}

// PortCloseResult says whether the forward was still open.
type PortCloseResult struct {
	Existed bool `json:"existed"`
}
