// Package docker holds the tests of the real binary that only the Docker
// provider can run: its hardened defaults, engine faults, fight-back and
// paths that must never reach the engine's host. What every provider must do
// is tested once per provider in package tests; a test lands here only when
// it needs the engine itself.
package docker_test
