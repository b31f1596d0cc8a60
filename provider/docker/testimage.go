package docker

import "github.com/resident-dev/resident/provider/docker/internal/keeperproto"

// KeeperPath is where the keeper sits inside every sandbox, for benchmarks
// that split its share of an exec from the engine's. (The test images are
// made by package dockertest.)
const KeeperPath = keeperproto.Path
