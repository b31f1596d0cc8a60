package resident

import (
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/resident-dev/resident/protocol"
)

// maxEgressRules bounds spec.egress.allow.
const maxEgressRules = 256

// egressRule is one spec.egress.allow entry. Exactly one of name, suffix
// and addr is set: an exact host name, a wildcard's suffix (".example.org"
// for "*.example.org"), or an address.
type egressRule struct {
	name   string
	suffix string
	addr   netip.Addr
	port   int
}

// egressPolicy is a sandbox's allow-list.
type egressPolicy []egressRule

func parseEgress(e *protocol.Egress) (egressPolicy, error) {
	if len(e.Allow) == 0 {
		return nil, invalid("spec.egress.allow is empty: give at least one host:port, or leave egress out")
	}
	if len(e.Allow) > maxEgressRules {
		return nil, invalid("spec.egress.allow has %d rules, more than %d", len(e.Allow), maxEgressRules)
	}
	policy := make(egressPolicy, 0, len(e.Allow))
	for _, text := range e.Allow {
		r, err := parseEgressRule(text)
		if err != nil {
			return nil, err
		}
		policy = append(policy, r)
	}
	return policy, nil
}

func parseEgressRule(text string) (egressRule, error) {
	host, portText, err := net.SplitHostPort(text)
	if err != nil {
		return egressRule{}, invalid("spec.egress.allow %q is not host:port", text)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 || portText[0] == '+' {
		return egressRule{}, invalid("spec.egress.allow %q: the port must be 1..65535", text)
	}
	r := egressRule{port: port}
	name, wildcard := strings.CutPrefix(host, "*.")
	name = canonicalHost(name)
	// An address is one written as such, or with the root's trailing dot
	// ("10.0.0.1."): as a name it would print as the address and mean
	// another rule.
	if addr, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil && !wildcard {
		if addr.Zone() != "" {
			return egressRule{}, invalid("spec.egress.allow %q: an address with a zone is not allowed", text)
		}
		r.addr = addr.Unmap()
		return r, nil
	}
	if !validHostName(name) {
		return egressRule{}, invalid("spec.egress.allow %q: %q is not a host name, *.suffix or an address", text, host)
	}
	if wildcard {
		r.suffix = "." + name
	} else {
		r.name = name
	}
	return r, nil
}

// String is the rule as a host would write it.
func (r egressRule) String() string {
	host := r.name
	switch {
	case r.addr.IsValid():
		host = r.addr.String()
	case r.suffix != "":
		host = "*" + r.suffix
	}
	return net.JoinHostPort(host, strconv.Itoa(r.port))
}

// allowsName reports whether a name rule lets host:port through; host is
// canonical. Only the exact name, or a name strictly below a wildcard's
// suffix, matches: "*.example.org" is not "example.org".
func (p egressPolicy) allowsName(host string, port int) bool {
	for _, r := range p {
		if r.port != port {
			continue
		}
		if r.name != "" && r.name == host {
			return true
		}
		if r.suffix != "" && len(host) > len(r.suffix) && strings.HasSuffix(host, r.suffix) {
			return true
		}
	}
	return false
}

// namesAddr reports whether an address rule names addr:port exactly.
func (p egressPolicy) namesAddr(addr netip.Addr, port int) bool {
	addr = addr.Unmap()
	for _, r := range p {
		if r.addr.IsValid() && r.port == port && r.addr == addr {
			return true
		}
	}
	return false
}

// canonicalHost is a name as rules compare it: lower case, without the
// root's trailing dot.
func canonicalHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// validHostName accepts DNS names of letters, digits, '-' and '_' (some
// package hosts have it) in labels of 1..63, 253 in all.
func validHostName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// reservedPrefixes are address ranges that are not the public internet,
// beyond what netip's predicates name: this network (0/8), shared address
// space (carrier NAT), IETF protocol assignments, benchmarking, reserved,
// NAT64 (which reaches IPv4 behind it) and 6to4.
var reservedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
}

// internalAddr reports whether addr is loopback, link-local (the cloud
// metadata services, 169.254.169.254 and fd00:ec2::254, are), private,
// unspecified, multicast or reserved: reachable only when a rule names it.
func internalAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsGlobalUnicast() || addr.IsPrivate() {
		return true
	}
	for _, p := range reservedPrefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
