package tensor

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
