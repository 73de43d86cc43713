package cpu

import (
	"fmt"
	"math"

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

// clamp is min(max(x, lo), hi), torch.clamp's order.
func (b *Backend) clamp(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	x := b.f32(n.In[0])
	if x == nil {
		return fmt.Errorf("clamp operand has no float data")
	}
	lo, hi := n.F[0], n.F[1]
	out := b.vals[i]
	for j, v := range x {
		out[j] = min(max(v, lo), hi)
	}
	return nil
}

// relAttention runs tensor.RelAttention one (query, head) at a time: the
// scores of the keys in its window (content and position dot products in
// float32, added), the soft cap, a max-subtracted softmax, the weighted
// values.
func (b *Backend) relAttention(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	q, k, v, rel := b.f32(n.In[0]), b.f32(n.In[1]), b.f32(n.In[2]), b.f32(n.In[3])
	if q == nil || k == nil || v == nil || rel == nil {
		return fmt.Errorf("rel attention operands have no float data")
	}
	rows, heads, d := n.Shape[0], n.Shape[1], n.Shape[2]
	p := g.Shape(n.In[3])[0]
	left, right, softcap := n.I[0], n.I[1], n.F[0]
	out := b.vals[i]
	scores := make([]float32, left+right)
	for qi := range rows {
		lo, hi := max(0, qi-left+1), min(rows-1, qi+max(right-1, 0))
		for h := range heads {
			qv := q[(qi*heads+h)*d : (qi*heads+h+1)*d]
			m := float32(math.Inf(-1))
			for j := lo; j <= hi; j++ {
				kv := k[(j*heads+h)*d : (j*heads+h+1)*d]
				var ac, bd float32
				for e, x := range qv {
					ac += x * kv[e]
				}
				if r := left - (qi - j); r < p {
					rv := rel[(r*heads+h)*d : (r*heads+h+1)*d]
					for e, x := range qv {
						bd += x * rv[e]
					}
				}
				s := ac + bd
				if softcap > 0 {
					s = softcap * float32(math.Tanh(float64(s/softcap)))
				}
				scores[j-lo] = s
				m = max(m, s)
			}
			var sum float32
			for j := lo; j <= hi; j++ {
				e := float32(math.Exp(float64(scores[j-lo] - m)))
				scores[j-lo] = e
				sum += e
			}
			o := out[(qi*heads+h)*d : (qi*heads+h+1)*d]
			clear(o)
			for j := lo; j <= hi; j++ {
				w := scores[j-lo] / sum
				for e, x := range v[(j*heads+h)*d : (j*heads+h+1)*d] {
					o[e] += w * x
				}
			}
		}
	}
	return nil
}
