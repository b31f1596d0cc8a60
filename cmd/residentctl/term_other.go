//go:build !linux

package main

import "os"

// isTerminal is false off Linux: progress is shown as plain lines there.
func isTerminal(*os.File) bool { return false }
