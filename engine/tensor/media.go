package tensor

import (
	"math"
	"slices"
)

// Ops for media towers and the splice of their output into a decoder's
// embeddings (docs/design/vision.md).

// Splice is x [n, d] with some rows replaced by rows of src [m, d]: from
// (host integers [n], InputInts) says, for each row r, which row of src
// takes its place, or -1 to keep x's. It is how a model's image soft
// tokens replace the placeholder tokens' embeddings (transformers'
// masked_scatter).
func (g *Graph) Splice(x, src, from T) T {
	xs, ss, fs := g.Shape(x), g.Shape(src), g.Shape(from)
	n := from.Node()
	if len(xs) != 2 || len(ss) != 2 || xs[1] != ss[1] || len(fs) != 1 || fs[0] != xs[0] || n < 0 || g.Nodes[n].Op != OpInput || g.Nodes[n].Ints == nil {
		return g.fail("splice: x %v, src %v, from %v (host integers, one per row of x)", xs, ss, fs)
	}
	for r, f := range g.Nodes[n].Ints {
		if f < -1 || int(f) >= ss[0] {
			return g.fail("splice: row %d takes row %d of a src of %d rows", r, f, ss[0])
		}
	}
	return g.add(Node{Op: OpSplice, In: []T{x, src, from}, Shape: clone(xs)})
}

// AvgPool2d averages k×k blocks of x [h·w, c], whose rows are a grid of h
// rows by w columns in row-major order (a vision tower's patches), giving
// [(h/k)·(w/k), c] in the same order: PyTorch's AvgPool2d(k, stride k) on
// the grid seen as [c, h, w].
func (g *Graph) AvgPool2d(x T, h, w, k int) T {
	xs := g.Shape(x)
	if len(xs) != 2 || h <= 0 || w <= 0 || k <= 0 || xs[0] != h*w || h%k != 0 || w%k != 0 {
		return g.fail("avgpool2d: x %v as a %d×%d grid in %d×%d blocks", xs, h, w, k, k)
	}
	return g.add(Node{Op: OpAvgPool2d, In: []T{x}, Shape: []int{(h / k) * (w / k), xs[1]}, I: [3]int{h, w, k}})
}

// Clamp is min(max(x, lo), hi) elementwise: torch.clamp, the input and
// output bounds of Gemma 4's clippable linears and ReLU (lo 0). Infinite
// bounds are taken as ±MaxFloat32, which clamps every finite value the
// same way and keeps infinities out of GPU uniforms.
func (g *Graph) Clamp(x T, lo, hi float32) T {
	lo, hi = max(lo, -math.MaxFloat32), min(hi, math.MaxFloat32)
	if !(lo <= hi) {
		return g.fail("clamp: bounds [%v, %v]", lo, hi)
	}
	return g.add(Node{Op: OpClamp, In: []T{x}, Shape: clone(g.Shape(x)), F: [2]float32{lo, hi}})
}

// RelAttention is the local self-attention of a conformer with a relative
// position term (Gemma 4's audio tower, transformers'
// Gemma4AudioAttention): q, k, v [n, h, d] over the same n positions and
// rel [p, h, d], the projected relative position embeddings. Query i sees
// key j when 0 ≤ i-j < left or 0 < j-i < right (transformers'
// sliding_window_mask_function with (left, right)); its score is
//
//	s = q_i·k_j + q_i·rel[left-(i-j)]   (the second term 0 past row p-1)
//
// computed as two float32 dot products added (the reference's matrix_ac
// and rel-shifted matrix_bd), then softcap·tanh(s/softcap) when softcap >
// 0, softmax in float32 over the keys the query sees, and the weighted sum
// of their values: [n, h, d]. No scale is applied: the caller scales q and
// k. The chunks of the reference only bound which keys it computes; with
// its mask they are exactly these.
func (g *Graph) RelAttention(q, k, v, rel T, left, right int, softcap float32) T {
	qs, ks, vs, rs := g.Shape(q), g.Shape(k), g.Shape(v), g.Shape(rel)
	if len(qs) != 3 || !slices.Equal(qs, ks) || !slices.Equal(qs, vs) || len(rs) != 3 || rs[1] != qs[1] || rs[2] != qs[2] ||
		rs[0] < 1 || left < 1 || right < 0 || softcap < 0 {
		return g.fail("rel attention: q %v, k %v, v %v, rel %v, window (-%d, %d), softcap %v", qs, ks, vs, rs, right, left, softcap)
	}
	return g.add(Node{Op: OpRelAttention, In: []T{q, k, v, rel}, Shape: clone(qs), I: [3]int{left, right}, F: [2]float32{softcap}})
}
