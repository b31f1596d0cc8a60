//go:build !linux

package main

// growPipes leaves the pipes as they are off Linux.
func growPipes(...int) {}
