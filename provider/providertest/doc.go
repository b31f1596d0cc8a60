// Package providertest is the conformance suite every provider runs. It
// turns the doc comments of package provider into tests: exact owner
// matching with the owner tag merged last, idempotent terminate, a restarted
// resident finding its sandboxes, argv exec with bytes end to end, an
// environment built only from what was asked, stdin streamed or closed,
// whole-tree kills (including children that ignore SIGTERM or leave the
// process group), completion at the main process's exit, write_file, and a
// store no path can escape.
//
// A provider calls Run from its own tests with a Harness:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Harness{New: newProvider, Image: "busybox:1.36"})
//	}
//
// Optional parts (store, write_file) are skipped when the provider does not
// implement the interface. The suite never asserts on durations: it awaits
// conditions with generous deadlines, because test machines are noisy.
package providertest
