package gpu

import (
	"fmt"

	"hearth/engine/tensor"
)

// kspec is a kernel before its pipeline is compiled.
type kspec struct {
	label  string
	src    string
	ops    []operand
	params func(g *tensor.Graph, p *[16]uint32)
	grid   [3]uint32 // workgroups; fixed, so a step can be encoded ahead
}

// compiler turns a graph into kernels. Node values are named by their
// storage root: a Reshape shares its input's storage.
type compiler struct {
	b    *Backend
	g    *tensor.Graph
	outs []tensor.T

	root    []int      // storage root of each node; -1 when it is a buffer
	rootBuf []tensor.T // the buffer when root is -1
	uses    []int      // consumers of each root (outputs count as one)
	isOut   []bool     // root is read back

	folded   []bool // node's work happens in another kernel
	jobAt    map[int]*mvJob
	writerAt []int       // node position where each root's kernel is emitted
	redirect map[int]int // root → Store node that receives it in place
	inputOf  map[int]int // Input root → region
	ropeOf   map[string]int
	ropeWith map[int]int // RoPE node → an earlier RoPE node it also computes
	inputs   []inputFill
	kernels  []kspec
	inBytes  uint64
}

func newCompiler(b *Backend, g *tensor.Graph, outs []tensor.T) *compiler {
	n := len(g.Nodes)
	c := &compiler{b: b, g: g, outs: outs,
		root: make([]int, n), rootBuf: make([]tensor.T, n), uses: make([]int, n), isOut: make([]bool, n),
		folded: make([]bool, n), writerAt: make([]int, n), jobAt: map[int]*mvJob{}, redirect: map[int]int{},
		inputOf: map[int]int{}, ropeOf: map[string]int{}, ropeWith: map[int]int{}}
	for i := range g.Nodes {
		c.root[i] = i
		c.writerAt[i] = i
		nd := &g.Nodes[i]
		// a Reshape, or a Slice of leading rows, is a view of its input
		if nd.Op == tensor.OpReshape || nd.Op == tensor.OpSlice && nd.I[0] == 0 && nd.I[1] == 0 {
			if r := nd.In[0].Node(); r >= 0 {
				c.root[i] = c.root[r]
				c.rootBuf[i] = c.rootBuf[r]
			} else {
				c.root[i] = -1
				c.rootBuf[i] = nd.In[0]
			}
			continue
		}
		for _, t := range nd.In {
			if r := c.rootOf(t); r >= 0 {
				c.uses[r]++
			}
		}
	}
	for _, t := range outs {
		if r := c.rootOf(t); r >= 0 {
			c.uses[r]++
			c.isOut[r] = true
		}
	}
	return c
}

// rootOf is the storage root of a node T, or -1 for a buffer.
func (c *compiler) rootOf(t tensor.T) int {
	if n := t.Node(); n >= 0 {
		return c.root[n]
	}
	return -1
}

// bufOf is the backend buffer behind t (directly or through Reshape).
func (c *compiler) bufOf(t tensor.T) *buffer {
	if n := t.Node(); n >= 0 {
		if c.root[n] >= 0 {
			return nil
		}
		t = c.rootBuf[n]
	}
	return c.b.buf(t)
}

func (c *compiler) build() error {
	if !c.b.opt.NoFusion {
		c.fuse()
		if c.b.skip&fuseRopeMV == 0 {
			c.ropeFolds()
		}
	} else {
		c.plainJobs()
	}
	if c.b.skip&fuseStore == 0 {
		c.storeFolds()
	}
	if !c.b.opt.NoFusion && c.b.skip&fuseRope == 0 {
		c.ropePairs()
	}
	for i := range c.g.Nodes {
		if c.folded[i] {
			continue
		}
		var err error
		if j, ok := c.jobAt[i]; ok {
			err = c.matvec(j)
		} else {
			err = c.node(i)
		}
		if err != nil {
			return fmt.Errorf("node %d (%v): %w", i, c.g.Nodes[i].Op, err)
		}
	}
	return nil
}

// storeFolds lets the kernel that makes a Store's source write it straight
// into the persistent buffer when nothing else reads the source and nothing
// reads the buffer in between.
func (c *compiler) storeFolds() {
	for s := range c.g.Nodes {
		nd := &c.g.Nodes[s]
		if nd.Op != tensor.OpStore {
			continue
		}
		// r must be made by a kernel (not host input, not an intermediate
		// a fusion never materialises) and read by this Store alone
		r := c.rootOf(nd.In[1])
		if r < 0 || c.uses[r] != 1 || c.isOut[r] || c.g.Nodes[r].Op == tensor.OpInput || c.folded[r] && c.writerAt[r] == r {
			continue
		}
		if tensor.Elements(c.g.Shape(nd.In[1])) != tensor.Elements(c.g.Nodes[r].Shape) {
			continue // the source is a view of part of r
		}
		if _, taken := c.redirect[r]; taken {
			continue
		}
		dst := c.b.buf(nd.In[0])
		if dst == nil || dst.kv != tensor.KVF32 {
			continue // a quantized buffer is written by its own kernel
		}
		clash := false
		for i := c.writerAt[r]; i < s && !clash; i++ {
			for _, t := range c.g.Nodes[i].In {
				if c.bufOf(t) == dst {
					clash = true
				}
			}
		}
		if j, ok := c.jobAt[c.writerAt[r]]; ok && j.reads(c, dst) {
			clash = true
		}
		if !clash {
			c.redirect[r] = s
			c.folded[s] = true
		}
	}
}

// ropePairs lets a RoPE node compute, in the same dispatch, an earlier
// RoPE node with the same positions, table and head size (a layer's q and
// k) when nothing up to and including the later one reads the earlier
// result, the earlier one is not stored in place, and its input is a node
// value (immutable until its last reader has run).
func (c *compiler) ropePairs() {
	nodes := c.g.Nodes
	paired := map[int]bool{}
	for j := range nodes {
		if nodes[j].Op != tensor.OpRoPE || c.folded[j] || paired[j] {
			continue
		}
		for i := j - 1; i >= 0; i-- {
			a, b := &nodes[i], &nodes[j]
			if a.Op != tensor.OpRoPE || c.folded[i] || paired[i] || a.Rope != b.Rope ||
				c.rootOf(a.In[1]) != c.rootOf(b.In[1]) || c.rootOf(a.In[1]) < 0 ||
				a.Shape[0] != b.Shape[0] || a.Shape[2] != b.Shape[2] || c.rootOf(a.In[0]) < 0 {
				continue
			}
			if _, stored := c.redirect[i]; stored {
				continue
			}
			read := false // j itself too: it runs in the same dispatch
			for k := i + 1; k <= j && !read; k++ {
				for _, t := range nodes[k].In {
					if c.rootOf(t) == i {
						read = true
					}
				}
			}
			if read {
				continue
			}
			c.ropeWith[j] = i
			c.folded[i] = true
			c.writerAt[i] = j
			paired[i], paired[j] = true, true
			break
		}
	}
}

// out is the write operand for root r's value and the element offset its
// kernel must add (non-zero when the value goes straight into a Store's
// buffer).
func (c *compiler) out(r int) (operand, func(g *tensor.Graph) uint32) {
	if s, ok := c.redirect[r]; ok {
		st := &c.g.Nodes[s]
		dst := c.b.buf(st.In[0])
		rowLen := uint32(tensor.Elements(dst.shape[1:]))
		return operand{kind: opData, buf: dst, write: true}, func(g *tensor.Graph) uint32 { return uint32(g.Nodes[s].I[0]) * rowLen }
	}
	return operand{kind: opSlot, node: r, size: c.valueBytes(r), write: true}, func(*tensor.Graph) uint32 { return 0 }
}

func (c *compiler) valueBytes(r int) uint64 {
	return (uint64(tensor.Elements(c.g.Nodes[r].Shape))*4 + 15) &^ 15
}

// f32 is a read operand for a float32 tensor: a node result, an input, an
// Alloc'd buffer or a single-block F32 weight.
func (c *compiler) f32(t tensor.T) (operand, error) {
	if r := c.rootOf(t); r >= 0 {
		nd := &c.g.Nodes[r]
		if nd.Op == tensor.OpInput {
			if nd.Ints != nil {
				return operand{}, fmt.Errorf("node %d holds integers where floats are needed", r)
			}
			return operand{kind: opInput, input: c.floatInput(r)}, nil
		}
		if s, ok := c.redirect[r]; ok {
			return operand{}, fmt.Errorf("internal: node %d was stored in place by node %d", r, s)
		}
		return operand{kind: opSlot, node: r, size: c.valueBytes(r)}, nil
	}
	buf := c.bufOf(t)
	if buf == nil {
		return operand{}, fmt.Errorf("operand %v is neither a node nor a live buffer", t)
	}
	if buf.kv != tensor.KVF32 {
		return operand{}, fmt.Errorf("%v kv cache buffer used where float32 data is needed", buf.kv)
	}
	if buf.kind != f32Kind || len(buf.blocks) != 1 {
		return operand{}, fmt.Errorf("weight %q (%v) used where float32 data is needed", buf.name, buf.kind)
	}
	return operand{kind: opData, buf: buf}, nil
}

// weight is the accessor and operands for reading t as a weight: a backend
// weight block, or any float32 tensor seen as an F32 weight.
func (c *compiler) weight(t tensor.T, blk int, name string, bind int, cols int, block bool) (accessor, []operand, error) {
	if buf := c.bufOf(t); buf != nil && !buf.alloc {
		a := accessor{Name: name, Bind: bind, Kind: buf.kind, Cols: cols, Block: block}
		ops := []operand{{kind: opData, buf: buf, blk: blk}}
		if buf.kind.quantized() {
			ops = append(ops, operand{kind: opSB, buf: buf, blk: blk})
		}
		return a, ops, nil
	}
	o, err := c.f32(t)
	if err != nil {
		return accessor{}, nil, err
	}
	return accessor{Name: name, Bind: bind, Kind: f32Kind, Cols: cols, Block: block}, []operand{o}, nil
}

// floatInput is the inputs-buffer region of a float Input node.
func (c *compiler) floatInput(r int) int {
	if i, ok := c.inputOf[r]; ok {
		return i
	}
	size := uint64(len(c.g.Nodes[r].Floats)) * 4
	i := c.region(size, func(g *tensor.Graph, dst []byte) error {
		putFloats(dst, g.Nodes[r].Floats)
		return nil
	})
	c.inputOf[r] = i
	return i
}

// region reserves size bytes of the inputs buffer, filled before each Run.
func (c *compiler) region(size uint64, fill func(g *tensor.Graph, dst []byte) error) int {
	off := c.inBytes
	padded := max(16, (size+15)&^15)
	c.inputs = append(c.inputs, inputFill{off: off, size: padded, fill: fill})
	c.inBytes = c.b.align(off + padded)
	return len(c.inputs) - 1
}

func (c *compiler) add(k kspec) { c.kernels = append(c.kernels, k) }

// grid1 spreads n workgroups over x and y (a dimension holds 65535).
func grid1(n int, z int) [3]uint32 {
	if n <= 0 {
		return [3]uint32{}
	}
	x := min(n, 65535)
	return [3]uint32{uint32(x), uint32((n + x - 1) / x), uint32(max(1, z))}
}

func elems(g *tensor.Graph, i int) int { return tensor.Elements(g.Nodes[i].Shape) }
