package main

import (
	"fmt"

	"hearth/assets"
	"hearth/engine/pool"
)

// defaultModel is the model `hearth serve` loads when none is configured:
// the starter model embedded in the binary (assets/starter), extracted on
// first use under the user's cache directory ($XDG_CACHE_HOME, else the
// platform's: ~/.cache on Linux, ~/Library/Caches on macOS).
func (c *cli) defaultModel() (pool.Model, error) {
	root, err := c.cacheRoot()
	if err != nil {
		return pool.Model{}, fmt.Errorf("starter model: no cache directory: %w", err)
	}
	dir, err := assets.Starter(root)
	if err != nil {
		return pool.Model{}, err
	}
	return pool.Model{ID: assets.StarterID, Dir: dir}, nil
}
