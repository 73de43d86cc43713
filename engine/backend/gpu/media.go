package gpu

import (
	"encoding/binary"
	"fmt"

	"hearth/engine/tensor"
)

// Kernels of the media ops (tensor/media.go; shaders/media.wgsl).

func (c *compiler) splice(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	src, err := c.f32(nd.In[1])
	if err != nil {
		return err
	}
	fromT := nd.In[2]
	if _, err := hostInts(g, fromT); err != nil {
		return fmt.Errorf("splice rows: %w", err)
	}
	n, d := nd.Shape[0], nd.Shape[1]
	from := operand{kind: opInput, input: c.region(uint64(n)*4, func(g *tensor.Graph, dst []byte) error {
		v, err := hostInts(g, fromT)
		if err != nil {
			return err
		}
		for r, f := range v {
			binary.LittleEndian.PutUint32(dst[r*4:], uint32(f)) // -1 is none
		}
		return nil
	})}
	out, off := c.out(i)
	c.add(kspec{label: "Splice", src: source("splice", nil), ops: []operand{x, src, from, out},
		params: func(g *tensor.Graph, p *[16]uint32) {
			p[0], p[1], p[2] = uint32(n), uint32(d), off(g)
		},
		grid: grid1((n*d+255)/256, 1),
	})
	return nil
}

func (c *compiler) avgPool2d(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	n, ch := nd.Shape[0], nd.Shape[1]
	out, off := c.out(i)
	c.add(kspec{label: "AvgPool2d", src: source("avgpool2d", nil), ops: []operand{x, out},
		params: func(g *tensor.Graph, p *[16]uint32) {
			nd := &g.Nodes[i]
			p[0], p[1], p[2], p[3], p[4] = uint32(n), uint32(ch), uint32(nd.I[1]), uint32(nd.I[2]), off(g)
		},
		grid: grid1((n*ch+255)/256, 1),
	})
	return nil
}

// attnSpans is the inputs region holding, for each query of attention
// node i, the end of the run of keys its span adds (tensor.AttnSpec.Keys),
// or 0 when it is in none.
func (c *compiler) attnSpans(i, nq int) operand {
	return operand{kind: opInput, input: c.region(uint64(nq)*4, func(g *tensor.Graph, dst []byte) error {
		a := g.Nodes[i].Attn
		for q := 0; q < nq; q++ {
			_, last := a.Keys(q)
			end := uint32(0)
			if last > a.QueryPos+q {
				end = uint32(last + 1)
			}
			binary.LittleEndian.PutUint32(dst[q*4:], end)
		}
		return nil
	})}
}

func (c *compiler) relAttention(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	var ops []operand
	for _, t := range nd.In {
		o, err := c.f32(t)
		if err != nil {
			return err
		}
		ops = append(ops, o)
	}
	n, h, d := nd.Shape[0], nd.Shape[1], nd.Shape[2]
	p := g.Shape(nd.In[3])[0]
	out, off := c.out(i)
	c.add(kspec{label: "RelAttention", src: source("relattention", nil), ops: append(ops, out),
		params: func(g *tensor.Graph, pr *[16]uint32) {
			nd := &g.Nodes[i]
			pr[0], pr[1], pr[2], pr[3] = uint32(n), uint32(h), uint32(d), uint32(p)
			pr[4], pr[5], pr[6], pr[7] = uint32(nd.I[0]), uint32(nd.I[1]), f32bits(nd.F[0]), off(g)
		},
		grid: grid1((n*h*d+255)/256, 1),
	})
	return nil
}
