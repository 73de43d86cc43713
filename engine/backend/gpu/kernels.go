package gpu

import (
	"encoding/binary"
	"fmt"
	"math"

	"hearth/engine/tensor"
)

// unaryExpr is each elementwise op as a WGSL expression of x (and P.c,
// P.d: the node's F).
var unaryExpr = map[tensor.Op]string{
	tensor.OpScale:    "x * P.c",
	tensor.OpSiLU:     "x / (1.0 + exp(-x))",
	tensor.OpGELU:     "0.5 * x * (1.0 + erf1(x * 0.70710678118654752))",
	tensor.OpGELUTanh: "0.5 * x * (1.0 + tanh1(0.79788456080286536 * (x + 0.044715 * x * x * x)))",
	tensor.OpTanhCap:  "P.c * tanh1(x / P.c)",
	tensor.OpClamp:    "min(max(x, P.c), P.d)",
}

// node emits the kernels of node i (one that no fusion covered).
func (c *compiler) node(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	switch nd.Op {
	case tensor.OpInput, tensor.OpReshape:
		return nil // data lives in the inputs buffer, or is an alias
	case tensor.OpSlice:
		if nd.I[0] == 0 && nd.I[1] == 0 {
			return nil // a view of the leading rows
		}
		return c.slice(i)
	case tensor.OpEmbed:
		return c.embed(i)
	case tensor.OpMatMul:
		return c.gemm(i)
	case tensor.OpAdd, tensor.OpMul:
		return c.binary(i)
	case tensor.OpScale, tensor.OpSiLU, tensor.OpGELU, tensor.OpGELUTanh, tensor.OpTanhCap, tensor.OpClamp:
		return c.unary(i)
	case tensor.OpSoftmax:
		return c.rowwise(i, "softmax", source("softmax", nil), nil)
	case tensor.OpRMSNorm, tensor.OpLayerNorm:
		return c.norm(i)
	case tensor.OpRoPE:
		return c.rope(i)
	case tensor.OpStore:
		return c.store(i)
	case tensor.OpAttention:
		return c.attention(i)
	case tensor.OpRoute:
		return c.route(i)
	case tensor.OpExpertMatMul:
		return c.expertMatMul(i)
	case tensor.OpExpertSum:
		return c.expertSum(i)
	case tensor.OpArgmax:
		return c.argmax(i)
	case tensor.OpSigmoid, tensor.OpSoftplus, tensor.OpCausalConv1d, tensor.OpGatedDeltaRule:
		return c.deltanet(i)
	case tensor.OpSplice:
		return c.splice(i)
	case tensor.OpAvgPool2d:
		return c.avgPool2d(i)
	case tensor.OpRelAttention:
		return c.relAttention(i)
	}
	return fmt.Errorf("op %v is not implemented by the gpu backend", nd.Op)
}

func f32bits(f float32) uint32 { return math.Float32bits(f) }

func putFloats(dst []byte, v []float32) {
	for i, f := range v {
		binary.LittleEndian.PutUint32(dst[i*4:], math.Float32bits(f))
	}
}

func (c *compiler) embed(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	n, hidden := nd.Shape[0], nd.Shape[1]
	vocab := g.Shape(nd.In[0])[0]
	idsT := nd.In[1]
	// ids are host integers (checked here, uploaded as u32) or float32
	// values on the device (a token the last step picked)
	var idsOp operand
	floatIDs := false
	if _, err := hostInts(g, idsT); err == nil {
		idsOp = operand{kind: opInput, input: c.region(uint64(n)*4, func(g *tensor.Graph, dst []byte) error {
			v, err := hostInts(g, idsT)
			if err != nil {
				return err
			}
			for t, id := range v {
				if id < 0 || int(id) >= vocab {
					return fmt.Errorf("token id %d outside the vocabulary [0, %d)", id, vocab)
				}
				binary.LittleEndian.PutUint32(dst[t*4:], uint32(id))
			}
			return nil
		})}
	} else {
		var ferr error
		if idsOp, ferr = c.f32(idsT); ferr != nil {
			return fmt.Errorf("embed ids: %w (and %w)", err, ferr)
		}
		floatIDs = true
	}
	blocks := []block{{rows: vocab}}
	if w := c.bufOf(nd.In[0]); w != nil && !w.alloc {
		blocks = w.blocks
	}
	out, off := c.out(i)
	for bi, bl := range blocks {
		a, wo, err := c.weight(nd.In[0], bi, "w", 3, hidden, false)
		if err != nil {
			return err
		}
		ops := append([]operand{idsOp, out}, wo...)
		row0, rows := bl.row0, bl.rows
		c.add(kspec{label: "embed " + a.Kind.String(), src: source("embed", map[string]any{"Acc": a.String(), "FloatIDs": floatIDs}), ops: ops,
			params: func(g *tensor.Graph, p *[16]uint32) {
				p[0], p[1], p[2], p[3], p[4] = uint32(n), uint32(hidden), uint32(row0), uint32(rows), off(g)
			},
			grid: grid1((n*hidden+255)/256, 1),
		})
	}
	return nil
}

func (c *compiler) binary(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	a, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	n, nb := elems(g, i), tensor.Elements(g.Shape(nd.In[1]))
	acc, bo, err := c.weight(nd.In[1], 0, "bv", 3, nb, false)
	if err != nil {
		return err
	}
	if acc.Kind.quantized() {
		return fmt.Errorf("a quantized weight cannot be an elementwise operand")
	}
	if buf := c.bufOf(nd.In[1]); buf != nil && len(buf.blocks) != 1 {
		return fmt.Errorf("weight %q is split and cannot be an elementwise operand", buf.name)
	}
	op := "+"
	if nd.Op == tensor.OpMul {
		op = "*"
	}
	out, off := c.out(i)
	c.add(kspec{label: nd.Op.String(), src: source("binary", map[string]any{"Acc": acc.String(), "Op": op}),
		ops: append([]operand{a, out}, bo...),
		params: func(g *tensor.Graph, p *[16]uint32) {
			p[0], p[1], p[2] = uint32(n), uint32(nb), off(g)
		},
		grid: grid1((n+255)/256, 1),
	})
	return nil
}

func (c *compiler) unary(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	n := elems(g, i)
	out, off := c.out(i)
	c.add(kspec{label: nd.Op.String(), src: source("unary", map[string]any{"Expr": unaryExpr[nd.Op]}),
		ops: []operand{x, out},
		params: func(g *tensor.Graph, p *[16]uint32) {
			p[0], p[1], p[2], p[3] = uint32(n), off(g), f32bits(g.Nodes[i].F[0]), f32bits(g.Nodes[i].F[1])
		},
		grid: grid1((n+255)/256, 1),
	})
	return nil
}

// rowwise emits a one-workgroup-per-row kernel over the last axis.
func (c *compiler) rowwise(i int, label, src string, extra []operand) error {
	g := c.g
	nd := &g.Nodes[i]
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	cols := nd.Shape[len(nd.Shape)-1]
	rows := elems(g, i) / max(1, cols)
	out, off := c.out(i)
	softmax := nd.Op == tensor.OpSoftmax
	c.add(kspec{label: label, src: src, ops: append([]operand{x, out}, extra...),
		params: func(g *tensor.Graph, p *[16]uint32) {
			p[0], p[1] = uint32(rows), uint32(cols)
			if softmax {
				p[2] = off(g)
				return
			}
			p[2], p[3], p[4] = f32bits(g.Nodes[i].F[0]), f32bits(g.Nodes[i].F[1]), off(g)
		},
		grid: grid1(rows, 1),
	})
	return nil
}

func (c *compiler) norm(i int) error {
	nd := &c.g.Nodes[i]
	cols := nd.Shape[len(nd.Shape)-1]
	var acc string
	var extra []operand
	bind := 3
	data := map[string]any{"Mean": nd.Op == tensor.OpLayerNorm}
	for j, name := range []string{"nw", "nb"} {
		if j+1 >= len(nd.In) || nd.In[j+1].IsNone() {
			continue
		}
		a, ops, err := c.weight(nd.In[j+1], 0, name, bind, cols, false)
		if err != nil {
			return err
		}
		if a.Kind.quantized() {
			return fmt.Errorf("a norm weight cannot be quantized")
		}
		acc += a.String()
		extra = append(extra, ops...)
		bind += len(ops)
		data[map[string]string{"nw": "W", "nb": "B"}[name]] = true
	}
	data["Acc"] = acc
	return c.rowwise(i, nd.Op.String(), source("norm", data), extra)
}

func (c *compiler) rope(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	if _, err := hostInts(g, nd.In[1]); err != nil {
		return fmt.Errorf("rope positions: %w", err)
	}
	n, heads, hd := nd.Shape[0], nd.Shape[1], nd.Shape[2]
	tab := c.ropeTab(i)
	out, off := c.out(i)
	ops := []operand{x, {kind: opInput, input: tab}, out}
	// a paired earlier RoPE (ropePairs) is stream 1 of the same dispatch
	heads1, off1, label := 0, func(*tensor.Graph) uint32 { return 0 }, "RoPE"
	if e, ok := c.ropeWith[i]; ok {
		x1, err := c.f32(g.Nodes[e].In[0])
		if err != nil {
			return err
		}
		var o1 operand
		o1, off1 = c.out(e)
		ops = append(ops, x1, o1)
		heads1, label = g.Nodes[e].Shape[1], "RoPE pair"
	}
	c.add(kspec{label: label, src: source("rope", map[string]any{"Two": heads1 > 0}), ops: ops,
		params: func(g *tensor.Graph, p *[16]uint32) {
			r := g.Nodes[i].Rope
			p[0], p[1], p[2], p[3] = uint32(n), uint32(heads), uint32(hd), uint32(r.Dims)
			if r.Traditional {
				p[4] = 1
			}
			p[5], p[6], p[7] = off(g), uint32(heads1), off1(g)
		},
		grid: grid1((n*(heads+heads1)*hd+255)/256, 1),
	})
	return nil
}

// ropeTab is the inputs region holding RoPE node i's (cos, sin) per token
// and pair; the q and k of a layer share positions and table, so one
// region serves both.
func (c *compiler) ropeTab(i int) int {
	nd := &c.g.Nodes[i]
	key := fmt.Sprintf("%d/%p", c.rootOf(nd.In[1]), nd.Rope)
	if tab, ok := c.ropeOf[key]; ok {
		return tab
	}
	posT, half := nd.In[1], nd.Rope.Dims/2
	tab := c.region(uint64(nd.Shape[0]*half)*8, func(g *tensor.Graph, dst []byte) error {
		pos, err := hostInts(g, posT)
		if err != nil {
			return err
		}
		ropeTable(pos, g.Nodes[i].Rope, dst)
		return nil
	})
	c.ropeOf[key] = tab
	return tab
}

// copyKernel emits O[off + r*ostride + c] = X[ioff + r*istride + c].
func (c *compiler) copyKernel(label string, x, out operand, params func(g *tensor.Graph, p *[16]uint32), count int) {
	c.add(kspec{label: label, src: source("copy", nil), ops: []operand{x, out}, params: params,
		grid: grid1((count+255)/256, 1)})
}

func (c *compiler) slice(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	if r := c.rootOf(nd.In[0]); r >= 0 && g.Nodes[r].Ints != nil {
		return nil // integer slices are resolved on the host by their consumers
	}
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	in := g.Shape(nd.In[0])
	cols := in[len(in)-1]
	rowLen := tensor.Elements(in[1:])
	n := elems(g, i)
	out, off := c.out(i)
	c.copyKernel("Slice", x, out, func(g *tensor.Graph, p *[16]uint32) {
		axis, start, end := g.Nodes[i].I[0], g.Nodes[i].I[1], g.Nodes[i].I[2]
		if axis == 0 {
			p[0], p[1], p[2], p[3] = 1, uint32((end-start)*rowLen), 0, uint32(start*rowLen)
		} else {
			w := end - start
			p[0], p[1], p[2], p[3], p[5] = uint32(n/w), uint32(w), uint32(cols), uint32(start), uint32(w)
		}
		p[4] = off(g)
	}, n)
	return nil
}

func (c *compiler) store(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	dst := c.b.buf(nd.In[0])
	if dst != nil && dst.kv != tensor.KVF32 {
		return c.storeKV(i, dst)
	}
	if dst == nil || !dst.alloc {
		return fmt.Errorf("store target %v is not an Alloc'd buffer", nd.In[0])
	}
	x, err := c.f32(nd.In[1])
	if err != nil {
		return err
	}
	n := elems(g, i)
	rowLen := tensor.Elements(dst.shape[1:])
	c.copyKernel("Store", x, operand{kind: opData, buf: dst, write: true}, func(g *tensor.Graph, p *[16]uint32) {
		p[0], p[1], p[4] = 1, uint32(n), uint32(g.Nodes[i].I[0]*rowLen)
	}, n)
	return nil
}

// maxSplits bounds how many workgroups share one query's keys. The merge
// (attention.wgsl, combine) reads the records of 8 splits at a time and
// one split's (max, sum) per invocation: a multiple of 8, at most 128.
const maxSplits = 32

func (c *compiler) attention(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	nq, hq, d := nd.Shape[0], nd.Shape[1], nd.Shape[2]
	hkv := g.Shape(nd.In[1])[1]
	if d%4 != 0 {
		return fmt.Errorf("head dimension %d is not a multiple of 4", d)
	}
	var ops []operand
	var kvq *buffer // quantized keys and values (kvquant.go)
	for j, t := range nd.In {
		if o, buf, ok := c.kvOperand(t); ok && j > 0 {
			if j == 2 && (kvq == nil || buf.kvSoff != kvq.kvSoff || buf.kv != kvq.kv) {
				return fmt.Errorf("attention: keys and values of different cache types")
			}
			kvq = buf
			ops = append(ops, o)
			continue
		}
		if j == 2 && kvq != nil {
			return fmt.Errorf("attention: keys and values of different cache types")
		}
		o, err := c.f32(t)
		if err != nil {
			return err
		}
		ops = append(ops, o)
	}
	out, off := c.out(i)
	ops = append(ops, out)
	split := nq*hq <= maxCounters
	// TP invocations share one key's value row (a vec4 each, DU4 of them
	// when the row is longer than 128 vec4s); 128/TP keys go in parallel,
	// UK per iteration (AttnShape.Keys).
	tp := 1
	for tp < min(d/4, 128) {
		tp *= 2
	}
	// SK: vec4s of a key row loaded together when scoring (four running
	// sums), the largest power of two up to AttnShape.Score that divides
	// the row
	sk := c.b.attn.Score
	for (d/4)%sk != 0 {
		sk /= 2
	}
	// a split's record: m, l and the D sums, rounded up to 128 bytes
	ps := (d + 2 + 31) / 32 * 32
	spans := len(nd.Attn.Spans) > 0 && !nd.Attn.Bidirectional
	data := map[string]any{"D": d, "TP": tp, "KG": 128 / tp, "DU4": (d/4 + tp - 1) / tp, "UK": c.b.attn.Keys, "SK": sk, "Split": split, "PS": ps, "MaxSplits": maxSplits, "Spans": spans,
		"Q8": kvq != nil && kvq.kv == tensor.KVQ8, "Q4": kvq != nil && kvq.kv == tensor.KVQ4, "G": tensor.KVGroups(d), "GV": tensor.KVGroup / 4}
	var kvSoff uint32
	if kvq != nil {
		kvSoff = kvq.kvSoff
	}
	if split {
		// the records are a value of the kernel's own; the counts are the
		// backend's, zero between dispatches
		cnt, err := c.b.counterBuf()
		if err != nil {
			return err
		}
		part := operand{kind: opSlot, node: len(g.Nodes) + i, size: uint64(maxSplits*nq*hq*ps) * 4, write: true}
		ops = append(ops, part, operand{kind: opData, buf: cnt, write: true})
	}
	if spans {
		ops = append(ops, c.attnSpans(i, nq))
	}
	// One query's keys are shared by up to maxSplits workgroups (at least
	// 64 keys each), so a decode step with few heads still fills the GPU.
	// The grid is sized for the most splits and idle workgroups return at
	// once: a fixed grid lets the next step be encoded ahead (see Run).
	splits := func(g *tensor.Graph) int {
		if !split {
			return 1
		}
		return min(maxSplits, max(1, (g.Nodes[i].Attn.KeyLen+63)/64))
	}
	maxGrid := 1
	if split {
		maxGrid = maxSplits
	}
	c.add(kspec{label: "Attention", src: source("attention", data), ops: ops,
		params: func(g *tensor.Graph, p *[16]uint32) {
			a := g.Nodes[i].Attn
			p[0], p[1], p[2], p[3] = uint32(nq), uint32(hq), uint32(hkv), uint32(a.QueryPos)
			p[4], p[5], p[6] = uint32(a.KeyLen), uint32(a.Window), uint32(a.Ring)
			if a.Bidirectional {
				p[7] = 1
			}
			p[8], p[9], p[10], p[11] = f32bits(a.Scale), f32bits(a.Softcap), uint32(splits(g)), off(g)
			p[12] = kvSoff
		},
		grid: grid1(nq*hq*maxGrid, 1),
	})
	return nil
}
