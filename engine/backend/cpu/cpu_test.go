package cpu

import (
	"testing"

	"hearth/engine/tensor/tensortest"
)

func TestConformance(t *testing.T) {
	for _, threads := range []int{1, 3} {
		tensortest.Check(t, New(Options{Threads: threads}))
	}
}
