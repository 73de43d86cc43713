// Package families is the list of model families Hearth runs, in
// resolution order. It is a leaf of the engine: the catalog
// (engine/registry) and the loader (engine) both resolve through it, and it
// pulls in no backend.
package families

import (
	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/family/universal"
)

// list is the registry, in resolution order: targeted ports first, the
// generic tier last, so a descriptor never shadows a port.
var list = []*family.Family{&universal.Family}

// Resolve returns the family that runs c, or an error wrapping
// family.ErrUnsupported that lists the supported model types.
func Resolve(c *config.Config) (*family.Family, error) { return family.Resolve(list, c) }
