// Package provider is the contract between the resident and the one compute
// backend it loads (local processes, a Docker engine, later Kubernetes). It is
// the Go translation of the bring-your-own-compute provider contract: secret
// prefixes and token patterns, auth and the unauthorized hook, create / exec /
// list_owned / read_owner / terminate, and the optional persistent store.
//
// The resident is the only consumer. It validates host input, checks
// ownership before every call on a sandbox id, enforces timeouts and output
// caps, and scrubs everything a provider returns; a provider does the one
// thing only it can: drive its backend. Providers register themselves by name
// from an init function (see Register); the resident opens one with Open.
//
// Errors: return *protocol.Error with a kind from the closed set where the
// cause is known (protocol.Errorf(protocol.KindNotFound, "container %s: %w",
// id, err)). Any other error reaches the host as transient.
package provider
