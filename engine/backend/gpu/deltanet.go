package gpu

import (
	"fmt"
	"math"

	"hearth/engine/tensor"
)

// Linear-attention kernels (tensor/deltanet.go; shaders/deltanet.wgsl).

// deltanetExpr is Sigmoid and Softplus as WGSL expressions of x. Softplus
// takes log1p from a series below 0.01, where log(1 + u) would lose the
// digits of u.
var deltanetExpr = map[tensor.Op]string{
	tensor.OpSigmoid:  "1.0 / (1.0 + exp(-x))",
	tensor.OpSoftplus: "select(select(log(1.0 + exp(x)), exp(x) * (1.0 - exp(x) * (0.5 - exp(x) * (0.33333333 - exp(x) * 0.25))), exp(x) < 0.01), x, x > 20.0)",
}

// maxDeltaKeyDim bounds the key head size of GatedDeltaRule: each
// invocation holds one column of the state, key-dim floats, in registers.
const maxDeltaKeyDim = 256

func (c *compiler) deltanet(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	switch nd.Op {
	case tensor.OpSigmoid, tensor.OpSoftplus:
		x, err := c.f32(nd.In[0])
		if err != nil {
			return err
		}
		n := elems(g, i)
		out, off := c.out(i)
		c.add(kspec{label: nd.Op.String(), src: source("unary", map[string]any{"Expr": deltanetExpr[nd.Op]}),
			ops: []operand{x, out},
			params: func(g *tensor.Graph, p *[16]uint32) {
				p[0], p[1] = uint32(n), off(g)
			},
			grid: grid1((n+255)/256, 1),
		})
		return nil
	case tensor.OpCausalConv1d:
		return c.causalConv1d(i)
	case tensor.OpGatedDeltaRule:
		return c.gatedDeltaRule(i)
	}
	return fmt.Errorf("op %v is not a linear-attention op", nd.Op)
}

// stateOut is the write operand of an op's next-state buffer.
func (c *compiler) stateOut(t tensor.T) (operand, error) {
	buf := c.b.buf(t)
	if buf == nil || !buf.alloc {
		return operand{}, fmt.Errorf("state target %v is not an Alloc'd buffer", t)
	}
	return operand{kind: opData, buf: buf, write: true}, nil
}

func (c *compiler) causalConv1d(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	n, ch := nd.Shape[0], nd.Shape[1]
	k := g.Shape(nd.In[1])[1]
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	state, err := c.f32(nd.In[2])
	if err != nil {
		return err
	}
	next, err := c.stateOut(nd.In[3])
	if err != nil {
		return err
	}
	blocks := []block{{rows: ch}}
	if w := c.bufOf(nd.In[1]); w != nil && !w.alloc {
		blocks = w.blocks
	}
	out, off := c.out(i)
	for bi, bl := range blocks {
		a, wo, err := c.weight(nd.In[1], bi, "w", 5, k, false)
		if err != nil {
			return err
		}
		if a.Kind.quantized() {
			return fmt.Errorf("conv1d taps cannot be quantized")
		}
		row0, rows := bl.row0, bl.rows
		c.add(kspec{label: "CausalConv1d", src: source("causalconv", map[string]any{"Acc": a.String()}),
			ops: append([]operand{x, state, out, next}, wo...),
			params: func(g *tensor.Graph, p *[16]uint32) {
				p[0], p[1], p[2], p[3], p[4], p[5] = uint32(n), uint32(ch), uint32(k), off(g), uint32(row0), uint32(rows)
			},
			grid: grid1(((n+k-1)*rows+255)/256, 1),
		})
	}
	return nil
}

func (c *compiler) gatedDeltaRule(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	qs := g.Shape(nd.In[0])
	n, hk, dk := qs[0], qs[1], qs[2]
	hv, dv := nd.Shape[1], nd.Shape[2]
	if dk > maxDeltaKeyDim {
		return fmt.Errorf("key head size %d is over %d", dk, maxDeltaKeyDim)
	}
	var ops []operand
	for _, t := range nd.In[:6] {
		o, err := c.f32(t)
		if err != nil {
			return err
		}
		ops = append(ops, o)
	}
	next, err := c.stateOut(nd.In[6])
	if err != nil {
		return err
	}
	out, off := c.out(i)
	ops = append(ops, out, next)
	perHead := (dv + 63) / 64
	scale := float32(1 / math.Sqrt(float64(dk)))
	c.add(kspec{label: "GatedDeltaRule", src: source("deltarule", map[string]any{"DK": dk}), ops: ops,
		params: func(g *tensor.Graph, p *[16]uint32) {
			p[0], p[1], p[2], p[3] = uint32(n), uint32(hk), uint32(hv), uint32(dv)
			p[4], p[5], p[6], p[7] = off(g), f32bits(scale), f32bits(tensor.DeltaRuleEps), uint32(perHead)
		},
		grid: grid1(hv*perHead, 1),
	})
	return nil
}
