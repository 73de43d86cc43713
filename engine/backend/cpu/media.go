package cpu

import (
	"fmt"

	"hearth/engine/tensor"
)

// splice copies x's rows, or src's where the row map says (tensor.Splice).
func (b *Backend) splice(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	x, src := b.f32(n.In[0]), b.f32(n.In[1])
	from := b.ints[n.In[2].Node()]
	if x == nil || src == nil || from == nil {
		return fmt.Errorf("splice needs float rows and a host row map")
	}
	d := n.Shape[1]
	out := b.vals[i]
	for r, f := range from {
		if f >= 0 {
			copy(out[r*d:(r+1)*d], src[int(f)*d:])
		} else {
			copy(out[r*d:(r+1)*d], x[r*d:])
		}
	}
	return nil
}

// avgPool2d sums each k×k block of the grid in float32, in row-major
// order, and scales by 1/k² (PyTorch's CPU AvgPool2d divides the sum).
func (b *Backend) avgPool2d(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	x := b.f32(n.In[0])
	if x == nil {
		return fmt.Errorf("avgpool2d operand has no float data")
	}
	w, k := n.I[1], n.I[2]
	c := n.Shape[1]
	ow := w / k
	out := b.vals[i]
	div := float32(k * k)
	for o := 0; o < n.Shape[0]; o++ {
		oy, ox := o/ow, o%ow
		dst := out[o*c : (o+1)*c]
		clear(dst)
		for dy := 0; dy < k; dy++ {
			for dx := 0; dx < k; dx++ {
				r := (oy*k+dy)*w + ox*k + dx
				for j, v := range x[r*c : (r+1)*c] {
					dst[j] += v
				}
			}
		}
		for j := range dst {
			dst[j] /= div
		}
	}
	return nil
}
