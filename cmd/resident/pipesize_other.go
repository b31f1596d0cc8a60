//go:build !linux

package main

import "os"

// growPipes leaves the pipes as they are off Linux.
func growPipes(...*os.File) {}
