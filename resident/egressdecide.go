package resident

import (
	"context"
	"fmt"
	"net"
	"net/netip"
)

// resolver is the part of net.Resolver egress uses; tests give their own.
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// egressTargets decides a connection to host:port and returns the addresses
// the resident may dial, in the resolver's order; an error is the refusal
// the client reads. The names are resolved here, by the resident, and the
// addresses dialled are these ones (a second lookup could answer
// otherwise). An address literal passes only by an address rule; a name
// passes by a name rule, and then each of its addresses must be public or
// named exactly by an address rule: a public name that resolves to
// 127.0.0.1 or 169.254.169.254 reaches neither.
func egressTargets(ctx context.Context, policy egressPolicy, r resolver, host string, port int) ([]netip.AddrPort, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" || !policy.namesAddr(addr, port) {
			return nil, fmt.Errorf("%s is not in spec.egress.allow", joinTarget(host, port))
		}
		return []netip.AddrPort{netip.AddrPortFrom(addr.Unmap(), uint16(port))}, nil
	}
	name := canonicalHost(host)
	if !validHostName(name) {
		return nil, fmt.Errorf("%q is not a host name", host)
	}
	if !policy.allowsName(name, port) {
		return nil, fmt.Errorf("%s is not in spec.egress.allow", joinTarget(name, port))
	}
	addrs, err := r.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return nil, fmt.Errorf("%s is allowed, but the resident cannot resolve it: %v", joinTarget(name, port), err)
	}
	var out []netip.AddrPort
	for _, a := range addrs {
		a = a.Unmap()
		if internalAddr(a) && !policy.namesAddr(a, port) {
			continue
		}
		out = append(out, netip.AddrPortFrom(a, uint16(port)))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s resolves only to internal addresses (%v), which only an exact ip:port rule opens", joinTarget(name, port), addrs)
	}
	return out, nil
}

func joinTarget(host string, port int) string { return net.JoinHostPort(host, portString(port)) }
