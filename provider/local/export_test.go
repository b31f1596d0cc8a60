//go:build linux

package local

// WithoutNetnsDial makes the provider carry connections as a resident
// without root does (its keeper's connection streams) until the returned
// func restores it.
func WithoutNetnsDial() func() {
	saved := netnsDial
	netnsDial = func() bool { return false }
	return func() { netnsDial = saved }
}
