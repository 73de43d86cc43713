package engine

import (
	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/family/universal"
)

// families is the registry, in resolution order: targeted ports first, the
// generic tier last, so a descriptor never shadows a port.
var families = []*family.Family{&universal.Family}

// Resolve returns the family that runs c, or an error wrapping
// family.ErrUnsupported that lists the supported model types.
func Resolve(c *config.Config) (*family.Family, error) { return family.Resolve(families, c) }
