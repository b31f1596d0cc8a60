package main

// The providers this binary can load; each registers itself by name.
import (
	_ "github.com/resident-dev/resident/provider/docker"
	_ "github.com/resident-dev/resident/provider/external"
	_ "github.com/resident-dev/resident/provider/kubernetes"
	_ "github.com/resident-dev/resident/provider/local"
)
