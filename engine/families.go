package engine

import (
	"hearth/engine/family"
	"hearth/engine/family/universal"
)

// families is the registry, in resolution order: targeted ports first, the
// generic tier last, so a descriptor never shadows a port.
var families = []*family.Family{&universal.Family}
