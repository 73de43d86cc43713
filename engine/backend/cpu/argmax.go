package cpu

import (
	"fmt"

	"hearth/engine/tensor"
)

// argmax writes each row's index of its largest value (tensor.Argmax's
// rule, which is the host sampler's). One pass over a vocabulary row costs
// little next to the matmul that made it, so it runs on one thread.
func (b *Backend) argmax(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	x := b.f32(n.In[0])
	if x == nil {
		return fmt.Errorf("argmax operand has no float data")
	}
	v := g.Shape(n.In[0])[1]
	out := b.vals[i]
	for r := range out {
		out[r] = float32(argmaxRow(x[r*v : (r+1)*v]))
	}
	return nil
}

// argmaxRow is the first index of the largest value; NaN never compares
// greater, so a row that starts with NaN gives 0.
func argmaxRow(row []float32) int {
	best, bv := 0, row[0]
	for j, v := range row {
		if v > bv {
			best, bv = j, v
		}
	}
	return best
}
