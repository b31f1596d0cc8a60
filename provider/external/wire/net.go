package wire

import (
	"fmt"
	"slices"
	"strings"
)

// MethodNetCommands asks a provider that announces port_forward or egress
// for the argv templates of the commands that carry connections
// (NetCommands; §4.2 of the page).
const MethodNetCommands = "net/commands"

// The placeholders of NetCommands: each is replaced, wherever it appears in
// an element of its template, by the port, listen address or connection id.
const (
	PlaceholderPort   = "{port}"
	PlaceholderListen = "{listen}"
	PlaceholderID     = "{id}"
)

// NetCommands answers net/commands: the argv templates of
// provider.Relayer's three commands, which the resident runs with
// exec/start (stdin on) to carry one connection each.
type NetCommands struct {
	Relay  []string `json:"relay"`  // connect to 127.0.0.1:{port} inside and copy both ways
	Proxy  []string `json:"proxy"`  // the egress proxy listening on {listen}
	Attach []string `json:"attach"` // join the proxy's held connection {id}
}

// Check says what is wrong with a provider's templates: each must be a
// command holding its placeholder.
func (n NetCommands) Check() error {
	for _, c := range []struct {
		name, placeholder string
		argv              []string
	}{{"relay", PlaceholderPort, n.Relay}, {"proxy", PlaceholderListen, n.Proxy}, {"attach", PlaceholderID, n.Attach}} {
		if len(c.argv) == 0 || c.argv[0] == "" {
			return fmt.Errorf("net/commands: %s has no command", c.name)
		}
		if !slices.ContainsFunc(c.argv, func(a string) bool { return strings.Contains(a, c.placeholder) }) {
			return fmt.Errorf("net/commands: %s %q does not hold %s", c.name, c.argv, c.placeholder)
		}
	}
	return nil
}

// Fill is template with placeholder replaced by value in every element.
func Fill(template []string, placeholder, value string) []string {
	out := make([]string, len(template))
	for i, a := range template {
		out[i] = strings.ReplaceAll(a, placeholder, value)
	}
	return out
}
