package gpu

import (
	"fmt"
	"slices"

	"hearth/engine/tensor"
)

// mvJob is one matrix-vector kernel and the graph nodes it covers. Every
// fusion computes the same float32 expression as the nodes it replaces
// (modulo summation order), so the conformance suite holds both ways:
//
//	group:    up to three MatMul(x, w_i) sharing x       → one dispatch
//	rms:      MatMul(RMSNorm(h, nw), w) with one row     → normalise in the prologue
//	dual:     Mul(SiLU(MatMul(x, g)), MatMul(x, u))      → silu(x·g)·(x·u)
//	epilogue: Add(r, Add(MatMul(x, w), bias))            → bias and residual added on store
type mvJob struct {
	at   int      // node where the kernel is emitted
	x    tensor.T // the activation rows read
	norm int      // folded RMSNorm node, or -1
	mats []int    // MatMul nodes (gate, up for dual)
	dual bool
	outs []int      // root written per output
	bias []tensor.T // per output
	res  []tensor.T // per output
	rope []int      // per output: a folded RoPE node, or -1 (nil: none)
}

// reads reports whether the job reads buffer dst.
func (j *mvJob) reads(c *compiler, dst *buffer) bool {
	ts := []tensor.T{j.x}
	for _, m := range j.mats {
		ts = append(ts, c.g.Nodes[m].In[1])
	}
	ts = append(append(ts, j.bias...), j.res...)
	for _, t := range ts {
		if !t.IsNone() && c.bufOf(t) == dst {
			return true
		}
	}
	return false
}

// mvRows is the number of activation rows of MatMul node i when the
// matrix-vector kernel can run it, else 0.
func (c *compiler) mvRows(i int) int {
	nd := &c.g.Nodes[i]
	if nd.Op != tensor.OpMatMul {
		return 0
	}
	w := c.bufOf(nd.In[1])
	if w == nil || w.alloc || len(w.blocks) != 1 {
		return 0
	}
	k := w.cols()
	xs := c.g.Shape(nd.In[0])
	m := tensor.Elements(xs) / k
	if k%32 != 0 || m > 16 || m < 1 {
		return 0
	}
	if r := c.rootOf(nd.In[0]); r >= 0 && c.g.Nodes[r].Ints != nil {
		return 0
	}
	if c.bufOf(nd.In[0]) != nil && c.bufOf(nd.In[0]).kind != f32Kind {
		return 0
	}
	return m
}

// plainJobs makes one unfused job per matrix-vector MatMul.
func (c *compiler) plainJobs() {
	for i := range c.g.Nodes {
		if c.mvRows(i) > 0 {
			c.addJob(&mvJob{at: i, x: c.g.Nodes[i].In[0], norm: -1, mats: []int{i}, outs: []int{i}, bias: []tensor.T{{}}, res: []tensor.T{{}}})
		}
	}
}

func (c *compiler) addJob(j *mvJob) {
	c.jobAt[j.at] = j
	for _, r := range j.outs {
		c.writerAt[r] = j.at
	}
}

// single is the one consumer of root r, or -1.
func (c *compiler) single(r int) int {
	if r < 0 || c.uses[r] != 1 || c.isOut[r] {
		return -1
	}
	for i := r + 1; i < len(c.g.Nodes); i++ {
		for _, t := range c.g.Nodes[i].In {
			if t.Node() == r {
				return i
			}
		}
	}
	return -1
}

func sameWeightShape(c *compiler, a, b int) bool {
	wa, wb := c.bufOf(c.g.Nodes[a].In[1]), c.bufOf(c.g.Nodes[b].In[1])
	return wa.kind == wb.kind && wa.cols() == wb.cols() && c.g.Nodes[a].In[0] == c.g.Nodes[b].In[0]
}

// fuse finds the mvJobs of the graph.
func (c *compiler) fuse() {
	taken := map[int]bool{}
	nodes := c.g.Nodes
	// dual: Mul(SiLU(G), U)
	for u := range nodes {
		if nodes[u].Op != tensor.OpMul || c.b.skip&fuseDual != 0 {
			continue
		}
		a, b := nodes[u].In[0].Node(), nodes[u].In[1].Node()
		if a < 0 || b < 0 {
			continue
		}
		if nodes[a].Op != tensor.OpSiLU {
			a, b = b, a
		}
		if a < 0 || nodes[a].Op != tensor.OpSiLU {
			continue
		}
		gate := nodes[a].In[0].Node()
		up := b
		if gate < 0 || c.mvRows(gate) == 0 || c.mvRows(up) == 0 || taken[gate] || taken[up] || !sameWeightShape(c, gate, up) ||
			c.single(gate) != a || c.single(a) != u || c.single(up) != u || !slices.Equal(nodes[gate].Shape, nodes[up].Shape) {
			continue
		}
		taken[gate], taken[up] = true, true
		c.folded[gate], c.folded[up], c.folded[a] = true, true, true
		c.addJob(&mvJob{at: u, x: nodes[gate].In[0], norm: -1, mats: []int{gate, up}, dual: true, outs: []int{u}, bias: []tensor.T{{}}, res: []tensor.T{{}}})
	}
	// epilogues: bias and residual adds
	for m := range nodes {
		if taken[m] || c.mvRows(m) == 0 || c.b.skip&fuseEpilogue != 0 {
			continue
		}
		j := &mvJob{at: m, x: nodes[m].In[0], norm: -1, mats: []int{m}, outs: []int{m}, bias: []tensor.T{{}}, res: []tensor.T{{}}}
		if a := c.single(m); a >= 0 && nodes[a].Op == tensor.OpAdd && nodes[a].In[0].Node() == m {
			if bb := c.bufOf(nodes[a].In[1]); bb != nil && !bb.alloc && !bb.kind.quantized() && len(bb.shape) == 1 && bb.shape[0] == nodes[m].Shape[len(nodes[m].Shape)-1] {
				j.bias[0] = nodes[a].In[1]
				c.folded[j.at] = true
				j.at, j.outs[0] = a, a
			}
		}
		if a := c.single(j.at); a >= 0 && nodes[a].Op == tensor.OpAdd {
			var r tensor.T
			switch {
			case nodes[a].In[0].Node() == j.at && nodes[a].In[1].Node() != j.at:
				r = nodes[a].In[1]
			case nodes[a].In[1].Node() == j.at && nodes[a].In[0].Node() != j.at:
				r = nodes[a].In[0]
			}
			if !r.IsNone() && slices.Equal(c.g.Shape(r), nodes[a].Shape) && c.isF32(r) {
				j.res[0] = r
				c.folded[j.at] = true
				j.at, j.outs[0] = a, a
			}
		}
		if j.at != m {
			taken[m] = true
			c.addJob(j)
		}
	}
	// groups of plain matmuls sharing x
	for m := range nodes {
		if taken[m] || c.mvRows(m) == 0 {
			continue
		}
		j := &mvJob{at: m, x: nodes[m].In[0], norm: -1, mats: []int{m}, outs: []int{m}, bias: []tensor.T{{}}, res: []tensor.T{{}}}
		taken[m] = true
		for o := m + 1; o < len(nodes) && len(j.mats) < 3; o++ {
			if c.b.skip&fuseGroup == 0 && !taken[o] && c.mvRows(o) > 0 && sameWeightShape(c, m, o) && c.bindingsFor(len(j.mats)+1) <= int(c.b.limits.MaxStorageBuffersPerShaderStage) {
				taken[o] = true
				c.folded[o] = true
				j.mats, j.outs = append(j.mats, o), append(j.outs, o)
				j.bias, j.res = append(j.bias, tensor.T{}), append(j.res, tensor.T{})
			}
		}
		c.addJob(j)
	}
	if c.b.skip&fuseRMS == 0 {
		c.rmsFolds()
	}
}

// ropeFolds lets a one-row matrix-vector kernel rotate an output that a
// RoPE of one token alone reads (a layer's q and k when decoding), so
// the RoPE needs no dispatch of its own (mvRope). The kernel writes the
// RoPE's value, straight into a cache when a Store takes it (storeFolds,
// which runs after this).
func (c *compiler) ropeFolds() {
	nodes := c.g.Nodes
	for at := range nodes {
		j, ok := c.jobAt[at]
		if !ok || j.dual || c.mvRowsOf(j) != 1 {
			continue
		}
		if s := c.spec(j, 1); s.Col > 0 || !s.shared() {
			continue
		}
		// each table is one more storage binding (bindingsFor, a bias one)
		binds := c.bindingsFor(len(j.mats))
		for _, t := range j.bias {
			if !t.IsNone() {
				binds++
			}
		}
		for i, m := range j.outs {
			r := c.ropeReader(m)
			if r < 0 || !j.res[i].IsNone() || binds >= int(c.b.limits.MaxStorageBuffersPerShaderStage) {
				continue
			}
			binds++
			if j.rope == nil {
				j.rope = make([]int, len(j.outs))
				for k := range j.rope {
					j.rope[k] = -1
				}
			}
			j.rope[i], j.outs[i] = r, r
			c.folded[r] = true
			c.writerAt[r] = j.at
		}
	}
}

// ropeReader is the RoPE node that alone reads all of root m, for one
// token with host positions and an even head size, or -1.
func (c *compiler) ropeReader(m int) int {
	if c.uses[m] != 1 || c.isOut[m] {
		return -1
	}
	nodes := c.g.Nodes
	for r := m + 1; r < len(nodes); r++ {
		nd := &nodes[r]
		if nd.Op == tensor.OpReshape || len(nd.In) == 0 || c.rootOf(nd.In[0]) != m {
			continue
		}
		// the kernel pairs rows 2p and 2p+1: a pair within a head
		if nd.Op != tensor.OpRoPE || c.folded[r] || nd.Shape[0] != 1 || nd.Shape[2]%2 != 0 ||
			tensor.Elements(nd.Shape) != tensor.Elements(nodes[m].Shape) {
			return -1
		}
		if _, err := hostInts(c.g, nd.In[1]); err != nil {
			return -1
		}
		return r
	}
	return -1
}

// mvRowsOf is the number of rows of x job j reads.
func (c *compiler) mvRowsOf(j *mvJob) int {
	if j.norm >= 0 {
		return 1
	}
	first := &c.g.Nodes[j.mats[0]]
	return tensor.Elements(c.g.Shape(first.In[0])) / c.bufOf(first.In[1]).cols()
}

// bindingsFor is the storage bindings of a group of n quantized weights
// with a norm weight: x, n·(data, scales), norm, n outputs.
func (c *compiler) bindingsFor(n int) int { return 1 + 2*n + 1 + n }

func (c *compiler) isF32(t tensor.T) bool {
	if r := c.rootOf(t); r >= 0 {
		return c.g.Nodes[r].Ints == nil
	}
	buf := c.bufOf(t)
	return buf != nil && buf.kind == f32Kind && len(buf.blocks) == 1
}

// rmsFolds moves an RMSNorm of a single row into the prologue of the jobs
// that consume it, when those jobs are its only consumers.
func (c *compiler) rmsFolds() {
	byX := map[int][]*mvJob{}
	for _, j := range c.jobAt {
		if n := j.x.Node(); n >= 0 {
			byX[n] = append(byX[n], j)
		}
	}
	for r, jobs := range byX {
		nd := &c.g.Nodes[r]
		if nd.Op != tensor.OpRMSNorm || c.isOut[r] || c.root[r] != r {
			continue
		}
		k := nd.Shape[len(nd.Shape)-1]
		if tensor.Elements(nd.Shape) != k || !c.sharedFits(jobs) {
			continue
		}
		if len(nd.In) > 1 {
			if w := c.bufOf(nd.In[1]); w == nil || w.kind.quantized() || len(w.blocks) != 1 {
				continue
			}
		}
		n, rows := 0, 0
		for _, j := range jobs {
			n += len(j.mats)
			rows += c.outRows(j)
		}
		if n != c.uses[r] || rows > c.b.mv.NormRows {
			continue
		}
		for _, j := range jobs {
			j.norm = r
			j.x = nd.In[0]
		}
		c.folded[r] = true
	}
}

// sharedFits reports whether every job can fold the RMS prologue
// (mvSpec.rmsFits).
func (c *compiler) sharedFits(jobs []*mvJob) bool {
	for _, j := range jobs {
		if !c.specWith(j, 1, true).rmsFits() {
			return false
		}
	}
	return true
}

// spec is the kernel shape for a job with m rows of x.
func (c *compiler) spec(j *mvJob, m int) *mvSpec { return c.specWith(j, m, j.norm >= 0) }

// specWith is spec for job j folding an RMSNorm (norm) or not.
func (c *compiler) specWith(j *mvJob, m int, norm bool) *mvSpec {
	w := c.bufOf(c.g.Nodes[j.mats[0]].In[1])
	sh := c.b.mv
	if c.b.mvAuto && m == 1 {
		sh = perMatrix(sh, c.outRows(j), w.cols(), norm || j.dual)
	}
	s := &mvSpec{K: w.cols(), Lanes: sh.Lanes, Rows: sh.Rows, B: sh.Batch, MB: 1, Dual: j.dual, RMS: norm}
	if n := sh.Iters; n > 0 {
		s.Lanes = lanesFor(s.K, n)
	}
	if m > 1 {
		s.MB, s.Rows = min(m, 4), 1
		return s
	}
	limit := int(c.b.limits.MaxComputeWorkgroupStorageSize)
	// dense weights (4–8 vec4 words per block and row) keep the row
	// kernel: the column kernel's registers for them crashed lavapipe
	if sh.Cols > 0 && w.kind.quantized() && s.colFit(sh.Cols, sh.Threads, limit) {
		return s
	}
	s.Col = 0
	s.CB = s.chunkBlocks(limit)
	return s
}

// outRows is the output rows job j computes for one row of x: every
// weight's (q, k and v for a group), gate's alone for gate and up.
func (c *compiler) outRows(j *mvJob) int {
	mats := j.mats
	if j.dual {
		mats = mats[:1]
	}
	rows := 0
	for _, m := range mats {
		rows += c.bufOf(c.g.Nodes[m].In[1]).shape[0]
	}
	return rows
}

// perMatrix is the default shape sh (the row kernel, 2 rows, at most 8
// blocks a lane) fitted to a kernel of one row of x, k wide, computing
// rows outputs (q, k and v together for a group; gate and up count once).
// Each choice is the fastest for its kind of matrix in per-kernel profiles
// of the 8B and 1B shapes on the H200 (docs/benchmarks.md, GPU,
// 2026-12-02):
//   - an LM head (more than 65536 rows): 4 rows an invocation, half the
//     workgroups;
//   - at least twice as wide as tall, with no prologue (a down
//     projection): the column kernel, 8 rows a workgroup, its x in
//     registers;
//   - otherwise the row kernel with more lanes (each with fewer blocks)
//     until there are enough workgroups to fill the GPU: 128 when every
//     workgroup repeats a prologue (a folded RMSNorm) or computes gate and
//     up, whose workgroups are costlier, else 256 (an H200 has 132 SMs).
//     For the 8B shape that leaves QKV and gate/up at 16 lanes and gives
//     o_proj 32; for the 1B, QKV 32 and o_proj 64.
func perMatrix(sh MatVecShape, rows, k int, prologue bool) MatVecShape {
	switch {
	case rows > headRows:
		sh.Rows = 4
	case !prologue && k >= 2*rows:
		sh.Cols = 8
	default:
		fill := 256
		if prologue {
			fill = 128
		}
		sh.Lanes = lanesFor(k, sh.Iters)
		for rpw := 256 / sh.Lanes * sh.Rows; sh.Lanes < 64 && (rows+rpw-1)/rpw < fill; rpw /= 2 {
			sh.Lanes *= 2
		}
		sh.Iters = 0
	}
	return sh
}

// lanesFor is the fewest of 16, 32 and 64 lanes that leave each at most
// n blocks of a k-wide row: a lane's blocks run one after another, so a
// wide matrix wants more.
func lanesFor(k, n int) int {
	lanes := 16
	for lanes < 64 && k/32 > n*lanes {
		lanes *= 2
	}
	return lanes
}

// matvec emits the kernel of job j.
func (c *compiler) matvec(j *mvJob) error {
	g := c.g
	first := &g.Nodes[j.mats[0]]
	m := c.mvRowsOf(j)
	s := c.spec(j, m)
	if s.RMS && !s.rmsFits() {
		return fmt.Errorf("internal: rms prologue without workgroup memory")
	}
	var ops []operand
	bind := 1
	next := func(o ...operand) int {
		b := bind
		ops = append(ops, o...)
		bind += len(o)
		return b
	}
	x, err := c.f32(j.x)
	if err != nil {
		return err
	}
	s.XBind = next(x)
	for i, mi := range j.mats {
		a, wo, err := c.weight(g.Nodes[mi].In[1], 0, fmt.Sprintf("w%d", i), bind, s.K, true)
		if err != nil {
			return err
		}
		next(wo...)
		s.W = append(s.W, a)
	}
	if s.RMS && len(g.Nodes[j.norm].In) > 1 {
		a, wo, err := c.weight(g.Nodes[j.norm].In[1], 0, "nw", bind, s.K, false)
		if err != nil {
			return err
		}
		next(wo...)
		s.Norm = &a
	}
	ns := make([]int, len(j.outs))
	offs := make([]func(*tensor.Graph) uint32, len(j.outs))
	for i, r := range j.outs {
		ns[i] = tensor.Elements(g.Nodes[r].Shape) / m
		s.Bias = append(s.Bias, nil)
		if !j.bias[i].IsNone() {
			a, bo, err := c.weight(j.bias[i], 0, fmt.Sprintf("b%d", i), bind, ns[i], false)
			if err != nil {
				return err
			}
			next(bo...)
			s.Bias[i] = &a
		}
		o, off := c.out(r)
		offs[i] = off
		s.Out = append(s.Out, next(o))
		s.Rope = append(s.Rope, nil)
		if j.rope != nil && j.rope[i] >= 0 {
			nd := &g.Nodes[j.rope[i]]
			s.Rope[i] = &mvRope{HD: nd.Shape[2], Dims: nd.Rope.Dims, Trad: nd.Rope.Traditional,
				Bind: next(operand{kind: opInput, input: c.ropeTab(j.rope[i])})}
		}
		s.Res = append(s.Res, -1)
		if !j.res[i].IsNone() {
			ro, err := c.f32(j.res[i])
			if err != nil {
				return err
			}
			s.Res[i] = next(ro)
		}
	}
	src := s.source()
	rpw := s.rowsPerWG()
	wgs := make([]int, len(ns))
	total := 0
	for i, n := range ns {
		total += (n + rpw - 1) / rpw
		wgs[i] = total
	}
	norm := j.norm
	label := fmt.Sprintf("matvec %v k%d", c.bufOf(first.In[1]).kind, s.K)
	switch {
	case j.dual:
		label += " dual"
	case len(j.outs) > 1:
		label += fmt.Sprintf(" group%d", len(j.outs))
	}
	if s.RMS {
		label += " rms"
	}
	if s.Res[0] >= 0 {
		label += " res"
	}
	if s.roped() {
		label += " rope"
	}
	if s.Col > 0 {
		label += fmt.Sprintf(" c%dx%d", s.Col, s.T)
	} else {
		label += fmt.Sprintf(" %dx%d", s.Rows, s.Lanes)
	}
	c.add(kspec{label: label, src: src, ops: ops,
		params: func(g *tensor.Graph, p *[16]uint32) {
			p[0] = uint32(m)
			for i, n := range ns {
				p[1+i] = uint32(n)
				p[9+i] = offs[i](g)
				p[12+i] = uint32(n)
			}
			p[4], p[5], p[6] = uint32(wgs[0]), uint32(wgs[min(1, len(wgs)-1)]), uint32(total)
			if norm >= 0 {
				p[7], p[8] = f32bits(g.Nodes[norm].F[0]), f32bits(g.Nodes[norm].F[1])
			}
		},
		grid: grid1(total, (m+s.MB-1)/s.MB),
	})
	return nil
}
