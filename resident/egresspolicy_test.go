package resident

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
)

func mustPolicy(t testing.TB, rules ...string) egressPolicy {
	t.Helper()
	p, err := parseEgress(&protocol.Egress{Allow: rules})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEgressRulesParse(t *testing.T) {
	for _, bad := range []string{"", "pypi.org", "pypi.org:0", "pypi.org:65536", "pypi.org:+1", "pypi.org:http",
		"*.:443", "*:443", "a..b:443", "-a.b:443", "a b:443", "[fe80::1%eth0]:443", "*.*.b:443", "http://a:443"} {
		if _, err := parseEgressRule(bad); protocol.KindOf(err) != protocol.KindInvalidRequest {
			t.Errorf("rule %q: err %v, want invalid_request", bad, err)
		}
	}
	for text, canonical := range map[string]string{
		"PyPI.org.:443": "pypi.org:443", "*.Example.org:443": "*.example.org:443",
		"10.1.2.3:5432": "10.1.2.3:5432", "[::1]:80": "[::1]:80", "[::ffff:10.0.0.1]:80": "10.0.0.1:80",
		"10.0.0.1.:22": "10.0.0.1:22", // the root's dot on an address: still the address
	} {
		r, err := parseEgressRule(text)
		if err != nil || r.String() != canonical {
			t.Errorf("rule %q: %v %q, want %q", text, err, r.String(), canonical)
		}
	}
	if _, err := parseEgress(&protocol.Egress{}); err == nil {
		t.Error("an empty allow-list was accepted")
	}
}

// staticResolver answers from a table, as DNS would.
type staticResolver map[string][]string

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	texts, ok := r[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, s := range texts {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func TestEgressTargets(t *testing.T) {
	policy := mustPolicy(t, "pypi.example:443", "*.example.org:443", "10.1.2.3:5432", "127.0.0.1:8080", "rebind.example:443", "both.example:443")
	dns := staticResolver{
		"pypi.example":      {"93.184.216.34"},
		"files.example.org": {"93.184.216.35", "2606:2800:220:1::1"},
		"rebind.example":    {"127.0.0.1", "169.254.169.254", "10.0.0.1", "::ffff:192.168.1.1"},
		"both.example":      {"10.9.9.9", "93.184.216.36"},
		"example.org":       {"93.184.216.37"},
		"localhost":         {"127.0.0.1"},
	}
	cases := []struct {
		host string
		port int
		want string // the addresses, or "refused: <part of the message>"
	}{
		{"pypi.example", 443, "93.184.216.34:443"},
		{"PYPI.example.", 443, "93.184.216.34:443"},
		{"pypi.example", 80, "refused: not in spec.egress.allow"},
		{"files.example.org", 443, "93.184.216.35:443 [2606:2800:220:1::1]:443"},
		{"example.org", 443, "refused: not in spec.egress.allow"},
		{"evilexample.org", 443, "refused: not in spec.egress.allow"},
		{"10.1.2.3", 5432, "10.1.2.3:5432"},
		{"::ffff:10.1.2.3", 5432, "10.1.2.3:5432"},
		{"10.1.2.3", 5433, "refused: not in spec.egress.allow"},
		{"127.0.0.1", 8080, "127.0.0.1:8080"},
		{"127.0.0.1", 8081, "refused: not in spec.egress.allow"},
		{"localhost", 8080, "refused: not in spec.egress.allow"},
		{"rebind.example", 443, "refused: only to internal addresses"},
		{"both.example", 443, "93.184.216.36:443"},
		{"169.254.169.254", 80, "refused: not in spec.egress.allow"},
		{"missing.example.org", 443, "refused: cannot resolve"},
		{"a b", 443, "refused: not a host name"},
	}
	for _, tc := range cases {
		addrs, err := egressTargets(context.Background(), policy, dns, tc.host, tc.port)
		var got []string
		for _, a := range addrs {
			got = append(got, a.String())
		}
		if err != nil {
			got = []string{"refused: " + err.Error()}
		}
		if g := strings.Join(got, " "); !strings.HasPrefix(tc.want, "refused: ") && g != tc.want ||
			strings.HasPrefix(tc.want, "refused: ") && !strings.Contains(g, strings.TrimPrefix(tc.want, "refused: ")) {
			t.Errorf("%s:%d: got %q, want %q", tc.host, tc.port, g, tc.want)
		}
	}
}

func TestInternalAddresses(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "::1", "10.0.0.1", "172.16.5.4", "192.168.0.1", "169.254.169.254", "fd00:ec2::254",
		"fe80::1", "0.0.0.0", "::", "100.64.0.1", "224.0.0.1", "255.255.255.255", "::ffff:127.0.0.1", "64:ff9b::a00:1", "2002:a00:1::1"} {
		if !internalAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s counts as public", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "2606:2800:220:1::1"} {
		if internalAddr(netip.MustParseAddr(a)) {
			t.Errorf("%s counts as internal", a)
		}
	}
}

// FuzzEgressRule: a rule that parses prints as a rule that parses to the
// same; a name it lets through is its own or strictly below its suffix, on
// its port; no name rule ever lets an address literal through.
func FuzzEgressRule(f *testing.F) {
	for _, seed := range [][2]string{{"pypi.org:443", "pypi.org"}, {"*.example.org:443", "a.example.org"}, {"*.example.org:443", "example.org"},
		{"10.0.0.1:22", "10.0.0.1"}, {"[::1]:80", "::1"}, {"*.b:1", "xb"}, {"A.B.:65535", "a.b"}} {
		f.Add(seed[0], seed[1], 443)
	}
	f.Fuzz(func(t *testing.T, text, host string, port int) {
		r, err := parseEgressRule(text)
		if err != nil {
			return
		}
		again, err := parseEgressRule(r.String())
		if err != nil || again != r {
			t.Fatalf("%q prints as %q, which parses to %+v (%v)", text, r.String(), again, err)
		}
		policy := egressPolicy{r}
		name := canonicalHost(host)
		if policy.allowsName(name, port) {
			exact := r.name != "" && name == r.name
			below := r.suffix != "" && strings.HasSuffix(name, r.suffix) && len(name) > len(r.suffix)
			if port != r.port || !(exact || below) {
				t.Fatalf("%s lets %s:%d through", r, name, port)
			}
			if _, err := netip.ParseAddr(name); err == nil && r.addr.IsValid() {
				t.Fatalf("an address rule matched as a name")
			}
		}
		if addr, err := netip.ParseAddr(host); err == nil && policy.namesAddr(addr, port) && (!r.addr.IsValid() || r.addr != addr.Unmap()) {
			t.Fatalf("%s names %s", r, addr)
		}
	})
}
