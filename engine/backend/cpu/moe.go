package cpu

import (
	"fmt"
	"math"

	"hearth/engine/tensor"
)

// Mixture-of-experts ops. ExpertMatMul groups the (token, slot) pairs by
// expert and runs the ordinary matmul (matvec below gemmMinRows rows, GEMM
// above) on each chosen expert's slice of the stacked weight, so only the
// routed experts' weights are read and every kernel (SIMD, int8
// activations) is reused as is.

// expertMats views a stacked weight [experts, out, in] as one mat per
// expert, sharing the weight's bytes.
func expertMats(w *tensor.Weight) []*mat {
	e, out, in := w.Shape[0], w.Shape[1], w.Shape[2]
	mats := make([]*mat, e)
	for i := range mats {
		sub := *w
		sub.Shape = []int{out, in}
		if w.Quant != nil {
			rowBytes := in * w.Quant.Bits / 8
			groups := out * in / w.Quant.GroupSize
			ssz := w.ScaleDType.Size()
			sub.Data = w.Data[i*out*rowBytes : (i+1)*out*rowBytes]
			sub.Scales = w.Scales[i*groups*ssz : (i+1)*groups*ssz]
			sub.Biases = w.Biases[i*groups*ssz : (i+1)*groups*ssz]
		} else {
			sz := out * in * w.DType.Size()
			sub.Data = w.Data[i*sz : (i+1)*sz]
		}
		mats[i] = newMat(&sub)
	}
	return mats
}

// route runs the router over each row of scores: top-k on the raw scores
// (softmax and sigmoid keep their order; ties go to the lower id), the
// chosen experts' probabilities, optionally renormalised.
func (b *Backend) route(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	scores := b.f32(n.In[0])
	if scores == nil {
		return fmt.Errorf("route scores have no float data")
	}
	e := g.Shape(n.In[0])[1]
	k, scoring, norm := n.I[0], n.I[1], n.I[2] != 0
	var scale []float32 // per-expert factors (RouteScaled)
	if len(n.In) > 1 {
		if scale = b.f32(n.In[1]); scale == nil {
			return fmt.Errorf("route expert scale has no float data")
		}
	}
	out := b.vals[i]
	if cap(b.scratch.moeIDs) < k {
		b.scratch.moeIDs = make([]int, k)
	}
	ids := b.scratch.moeIDs[:k]
	for r := 0; r < len(scores)/e; r++ {
		row := scores[r*e : (r+1)*e]
		topK(row, ids)
		o := out[r*2*k : (r+1)*2*k]
		if scoring == tensor.RouteSigmoid {
			for j, id := range ids {
				o[j] = 1 / (1 + exp32(-row[id]))
			}
		} else {
			mx := row[ids[0]]
			var sum float64
			for _, v := range row {
				sum += float64(exp32(v - mx))
			}
			inv := float32(1 / sum)
			for j, id := range ids {
				o[j] = exp32(row[id]-mx) * inv
			}
		}
		if norm {
			var s float32
			for _, v := range o[:k] {
				s += v
			}
			for j := range o[:k] {
				o[j] /= s
			}
		}
		for j, id := range ids {
			if scale != nil {
				o[j] *= scale[id]
			}
			o[k+j] = float32(id)
		}
	}
	return nil
}

// topK writes the indices of the len(ids) largest values of row, largest
// first, the lower index first among equal values.
func topK(row []float32, ids []int) {
	k := len(ids)
	for j := range ids {
		ids[j] = -1
	}
	for c, v := range row {
		if math.IsNaN(float64(v)) {
			continue
		}
		// insertion into the sorted prefix; a later equal value goes after
		p := k
		for p > 0 && (ids[p-1] < 0 || row[ids[p-1]] < v) {
			p--
		}
		if p == k {
			continue
		}
		copy(ids[p+1:], ids[p:k-1])
		ids[p] = c
	}
	for j := range ids {
		if ids[j] < 0 { // only NaN scores left: take the first unused ids
			ids[j] = firstUnused(ids[:j])
		}
	}
}

func firstUnused(used []int) int {
	for c := 0; ; c++ {
		seen := false
		for _, u := range used {
			seen = seen || u == c
		}
		if !seen {
			return c
		}
	}
}

// expertID reads slot j's expert id from a route row, checking it.
func expertID(o []float32, k, j, experts int) (int, error) {
	v := o[k+j]
	id := int(v)
	if float32(id) != v || id < 0 || id >= experts {
		return 0, fmt.Errorf("route names expert %v, outside [0, %d)", v, experts)
	}
	return id, nil
}

func (b *Backend) expertMatMul(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	x, route := b.f32(n.In[0]), b.f32(n.In[2])
	bi := n.In[1].Buffer()
	if x == nil || route == nil || bi < 0 || b.bufs[bi].experts == nil {
		return fmt.Errorf("expert matmul needs float input and route, and a stacked [experts, out, in] weight")
	}
	mats := b.bufs[bi].experts
	tokens, k, rows := n.Shape[0], n.Shape[1], n.Shape[2]
	cols := mats[0].cols
	perSlot := len(g.Shape(n.In[0])) == 3
	out := b.vals[i]
	// bucket the (token, slot) pairs by expert, in token order
	s := &b.scratch
	if cap(s.moeCount) < len(mats)+1 {
		s.moeCount = make([]int, len(mats)+1)
	}
	count := s.moeCount[:len(mats)+1]
	clear(count)
	if cap(s.moePairs) < tokens*k {
		s.moePairs = make([]int, tokens*k)
	}
	pairs := s.moePairs[:tokens*k]
	for t := 0; t < tokens; t++ {
		for j := 0; j < k; j++ {
			e, err := expertID(route[t*2*k:(t+1)*2*k], k, j, len(mats))
			if err != nil {
				return err
			}
			count[e+1]++
		}
	}
	for e := 1; e <= len(mats); e++ {
		count[e] += count[e-1]
	}
	fill := append(s.moeFill[:0], count[:len(mats)]...)
	s.moeFill = fill
	for t := 0; t < tokens; t++ {
		for j := 0; j < k; j++ {
			e := int(route[t*2*k+k+j])
			pairs[fill[e]] = t*k + j
			fill[e]++
		}
	}
	for e, m := range mats {
		lo, hi := count[e], count[e+1]
		if lo == hi {
			continue
		}
		c := hi - lo
		xg := grow(&s.moeX, c*cols)
		for p, pr := range pairs[lo:hi] {
			xr := pr / k
			if perSlot {
				xr = pr
			}
			copy(xg[p*cols:(p+1)*cols], x[xr*cols:(xr+1)*cols])
		}
		yg := grow(&s.moeY, c*rows)
		// one-element slices kept in the backend, so a step allocates nothing
		ms, os := b.tasks.moeMat[:], b.tasks.moeOut[:]
		ms[0], os[0] = m, yg
		if c >= gemmMinRows {
			b.gemm(xg, c, cols, ms, os)
		} else {
			b.matvec(xg, c, cols, ms, os)
		}
		ms[0], os[0] = nil, nil
		for p, pr := range pairs[lo:hi] {
			copy(out[pr*rows:(pr+1)*rows], yg[p*rows:(p+1)*rows])
		}
	}
	return nil
}

func (b *Backend) expertSum(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	y, route := b.f32(n.In[0]), b.f32(n.In[1])
	if y == nil || route == nil {
		return fmt.Errorf("expert sum needs float inputs")
	}
	k, d := g.Shape(n.In[0])[1], n.Shape[1]
	out := b.vals[i]
	for t := 0; t < n.Shape[0]; t++ {
		o := out[t*d : (t+1)*d]
		clear(o)
		for j := 0; j < k; j++ {
			w := route[t*2*k+j]
			for c, v := range y[(t*k+j)*d : (t*k+j+1)*d] {
				o[c] += w * v
			}
		}
	}
	return nil
}
