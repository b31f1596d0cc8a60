package local

import "github.com/resident-dev/resident/provider"

// The Provider embeds keeperexec.Relay: an isolated sandbox sees the
// keeper at keeperproto.Path (keeperBinds), and its execs run through its
// init, all in the sandbox's one network namespace, so a server one exec
// starts is on the loopback the next one reaches. Without isolation local
// announces neither port_forward nor egress (Info), so the resident never
// asks for the commands. The egress proxy's attach socket is an abstract
// one, which belongs to the sandbox's own network namespace: the resident
// asks for it only with spec.network "none" (its own namespace, holding
// only lo), so two sandboxes' proxies never meet.
var _ provider.Relayer = (*Provider)(nil)
