package cpu

import (
	"testing"

	"hearth/engine/tensor/tensortest"
)

// TestConformance runs the conformance suite on every kernel set this CPU
// runs (the pure-Go one included), single-threaded and on the pool.
func TestConformance(t *testing.T) {
	for _, ks := range KernelSets() {
		for _, threads := range []int{1, 3} {
			t.Run(ks, func(t *testing.T) {
				b := New(Options{Threads: threads, Kernels: ks})
				defer b.Close()
				tensortest.Check(t, b)
			})
		}
	}
}
