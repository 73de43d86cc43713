package gpu

import (
	"fmt"

	"hearth/engine/tensor"
)

// Mixture-of-experts kernels: the router writes each row's expert ids next
// to their weights in device memory, and the expert matmul reads them
// there, so the choice never goes through the host.

func (c *compiler) route(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	n, e := nd.Shape[0], g.Shape(nd.In[0])[1]
	out, off := c.out(i)
	ops := []operand{x, out}
	data := map[string]any{}
	if len(nd.In) > 1 { // RouteScaled: the per-expert factors, as a weight of any float dtype
		a, sops, err := c.weight(nd.In[1], 0, "es", 3, e, false)
		if err != nil {
			return err
		}
		if a.Kind.quantized() {
			return fmt.Errorf("a route's expert scale cannot be quantized")
		}
		data["Scale"] = a.String()
		ops = append(ops, sops...)
	}
	c.add(kspec{label: "Route", src: source("route", data), ops: ops,
		params: func(g *tensor.Graph, p *[16]uint32) {
			nd := &g.Nodes[i]
			p[0], p[1], p[2] = uint32(n), uint32(e), uint32(nd.I[0])
			if nd.I[1] == tensor.RouteSigmoid {
				p[3] = 1
			}
			p[4], p[5] = uint32(nd.I[2]), off(g)
		},
		grid: grid1((n+63)/64, 1),
	})
	return nil
}

// ExpertMatMul runs the expert-major kernel (expertgemm), which reads each
// chosen expert's weight once per block of its slots, when the experts get
// at least this many slots on average (n·k/experts); below, the per-slot
// matrix-vector kernel (expertmm), which reads it once per slot but wastes
// no arithmetic on empty tile columns. On lavapipe, which is bound by
// arithmetic, the two cross near 8 (moe_bench_test.go); a GPU bound by
// memory should gain from fewer, so real adapters switch at 4 (not
// measured). Decode (one row) takes expertmm either way.
const (
	expertGroupAtEmulated = 8
	expertGroupAt         = 4
)

// expertKernel forces one ExpertMatMul kernel (tests and the benchmark):
// 1 the expert-major one, even for one row, -1 the per-slot one; 0 picks.
var expertKernel = 0

// grouped reports whether ExpertMatMul of n rows, k slots each, over the
// given experts runs the expert-major kernel.
func (c *compiler) grouped(n, k, experts int) bool {
	if expertKernel != 0 {
		return expertKernel > 0
	}
	at := expertGroupAt
	if c.b.info.Emulated {
		at = expertGroupAtEmulated
	}
	return n > 1 && n*k >= at*experts
}

// expertgemm's tiles: 4096 outputs (rows × slots) per workgroup, 4 × 4
// per invocation, shaped by the slots an expert gets on average. The slice
// of columns staged per step is the widest of 32, 16, 8 whose workgroup
// memory fits the device's (fewer, wider steps mean fewer barriers; 8
// fits 16 KiB, the least the backend accepts). The slot list holds egCap
// entries.
var egTiles = []struct{ rows, pairs int }{{256, 16}, {128, 32}, {64, 64}}

const egCap = 768

func (c *compiler) expertMatMul(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	r, err := c.f32(nd.In[2])
	if err != nil {
		return err
	}
	w := c.bufOf(nd.In[1])
	if w == nil || w.alloc || len(w.shape) != 3 {
		return fmt.Errorf("expert matmul weight %v is not an uploaded [experts, out, in] weight", nd.In[1])
	}
	experts, rows, cols := w.shape[0], w.shape[1], w.shape[2]
	n, k := nd.Shape[0], nd.Shape[1]
	perSlot := uint32(0)
	if len(g.Shape(nd.In[0])) == 3 {
		perSlot = 1
	}
	out, off := c.out(i)
	if c.grouped(n, k, experts) {
		return c.expertGemm(w, nd.In[1], []operand{x, r, out}, off, n, k, perSlot)
	}
	block := cols%32 == 0
	// lanes per output row: enough for the row's 32-element blocks (or
	// elements), at most 32; the rest of the 256 invocations take rows
	units := cols
	if block {
		units = cols / 32
	}
	lanes := 1
	for lanes < min(32, units) {
		lanes *= 2
	}
	perWG := 256 / lanes
	blocks := (rows + perWG - 1) / perWG
	for bi, bl := range w.blocks {
		a, wo, err := c.weight(nd.In[1], bi, "w", 4, cols, block)
		if err != nil {
			return err
		}
		row0, brows := bl.row0, bl.rows
		c.add(kspec{label: "ExpertMatMul " + a.Kind.String(), src: source("expertmm", map[string]any{"Acc": a.String(), "Block": block, "Lanes": lanes, "Rows": perWG}),
			ops: append([]operand{x, r, out}, wo...),
			params: func(g *tensor.Graph, p *[16]uint32) {
				p[0], p[1], p[2], p[3] = uint32(n*k), uint32(k), uint32(rows), uint32(cols)
				p[4], p[5], p[6], p[7] = perSlot, uint32(experts), uint32(blocks), off(g)
				p[8], p[9] = uint32(row0), uint32(brows)
			},
			grid: grid1(n*k*blocks, 1),
		})
	}
	return nil
}

// expertGemm emits the expert-major ExpertMatMul (expertgemm in moe.wgsl):
// one workgroup per (expert, tile of output rows), per weight block over the
// experts whose rows the block holds. ops are x, route and the output.
func (c *compiler) expertGemm(w *buffer, wt tensor.T, ops []operand, off func(*tensor.Graph) uint32, n, k int, perSlot uint32) error {
	experts, rows, cols := w.shape[0], w.shape[1], w.shape[2]
	// the smallest tile whose slot count covers the average
	avg := (n*k + experts - 1) / experts
	t := egTiles[len(egTiles)-1]
	for _, tt := range egTiles {
		if tt.pairs >= avg {
			t = tt
			break
		}
	}
	slice := 8
	for _, s := range []int{32, 16} {
		if uint64((t.rows+t.pairs)*s*4+egCap*4+16) <= uint64(c.b.limits.MaxComputeWorkgroupStorageSize) {
			slice = s
			break
		}
	}
	tiles := (rows + t.rows - 1) / t.rows
	src := map[string]any{"Rows": t.rows, "Pairs": t.pairs, "Slice": slice, "Cap": egCap, "Flush": egCap - 256, "Quant": w.kind.quantized()}
	if q := w.kind; q.quantized() && 32%q.bits == 0 {
		// 2, 4, 8 bits: 8 levels from whole words rather than one by one
		src["Word"], src["Bits"], src["Mask"] = true, q.bits, 1<<q.bits-1
	}
	for bi, bl := range w.blocks {
		a, wo, err := c.weight(wt, bi, "w", 4, cols, false)
		if err != nil {
			return err
		}
		src["Acc"] = a.String()
		row0, brows := bl.row0, bl.rows
		e0, e1 := row0/rows, (row0+brows-1)/rows
		groups := (e1 - e0 + 1) * tiles
		c.add(kspec{label: "ExpertMatMul grouped " + a.Kind.String(), src: source("expertgemm", src),
			ops: append(append([]operand(nil), ops...), wo...),
			params: func(g *tensor.Graph, p *[16]uint32) {
				p[0], p[1], p[2], p[3] = uint32(n*k), uint32(k), uint32(rows), uint32(cols)
				p[4], p[5], p[6], p[7] = perSlot, uint32(experts), uint32(tiles), off(g)
				p[8], p[9], p[10], p[11] = uint32(row0), uint32(brows), uint32(e0), uint32(groups)
			},
			grid: grid1(groups, 1),
		})
	}
	return nil
}

func (c *compiler) expertSum(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	y, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	r, err := c.f32(nd.In[1])
	if err != nil {
		return err
	}
	n, d := nd.Shape[0], nd.Shape[1]
	k := g.Shape(nd.In[0])[1]
	out, off := c.out(i)
	c.add(kspec{label: "ExpertSum", src: source("expertsum", nil), ops: []operand{y, r, out},
		params: func(g *tensor.Graph, p *[16]uint32) {
			p[0], p[1], p[2], p[3] = uint32(n), uint32(k), uint32(d), off(g)
		},
		grid: grid1((n*d+255)/256, 1),
	})
	return nil
}
