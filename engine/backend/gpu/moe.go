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
	c.add(kspec{label: "Route", src: source("route", nil), ops: []operand{x, out},
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
	block := cols%32 == 0
	perSlot := uint32(0)
	if len(g.Shape(nd.In[0])) == 3 {
		perSlot = 1
	}
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
	out, off := c.out(i)
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
