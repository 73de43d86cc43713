package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/cogentcore/webgpu/wgpu"

	"hearth/engine/tensor"
)

// plan is a compiled graph: kernels in order with their device buffers
// bound. Plans are cached by the graph's structure (planKey), so a graph
// that repeats reuses pipelines, bind groups and result buffers; only the
// input data and the kernels' parameters (positions, cache rows, key
// counts) are written again.
type plan struct {
	kernels  []*kernel
	slots    []uint64 // bytes each pool slot must hold
	inputs   []inputFill
	inBytes  uint64
	outs     []outCopy
	readback map[tensor.T]readRegion
	rbBytes  uint64
	uses     map[uint64]bool        // serials of the backend buffers bound
	gen      uint64                 // pool generation the bind groups were made for
	used     uint64                 // LRU clock
	params   []byte                 // host staging, one paramStride per kernel
	ready    [2]*wgpu.CommandBuffer // the next run's commands per readback buffer, encoded ahead
	readyGen [2]uint64              // readback generation each was encoded for
	inData   []byte                 // host staging for the inputs buffer
}

// kernel is one dispatch.
type kernel struct {
	label  string
	pipe   *wgpu.ComputePipeline
	ops    []operand // bindings 1..n (binding 0 is the parameters)
	params func(g *tensor.Graph, p *[16]uint32)
	grid   [3]uint32 // workgroups, fixed for the plan
	group  *wgpu.BindGroup
}

type opKind uint8

const (
	opSlot  opKind = iota // a node result in a pool slot
	opInput               // a region of the inputs buffer
	opData                // a backend buffer block's data
	opSB                  // a quantized block's scales and biases
)

// operand is one storage binding of a kernel.
type operand struct {
	kind  opKind
	node  int // opSlot: the node whose value it is (or a private value past the nodes)
	slot  int // opSlot: resolved pool slot
	input int // opInput: region index
	buf   *buffer
	blk   int
	size  uint64 // opSlot: bytes
	write bool
}

// inputFill writes one region of the inputs buffer from the graph.
type inputFill struct {
	off, size uint64
	fill      func(g *tensor.Graph, dst []byte) error
}

// outCopy copies an output into the readback buffer at the end of a Run.
type outCopy struct {
	src  operand
	off  uint64 // source byte offset (input regions)
	dst  uint64
	size uint64
}

type readRegion struct {
	off   uint64
	elems int
}

// paramStride is the byte distance between kernels' parameter blocks.
func (b *Backend) paramStride() uint64 {
	return max(64, uint64(b.limits.MinUniformBufferOffsetAlignment))
}

func (b *Backend) align(n uint64) uint64 {
	a := max(16, uint64(b.limits.MinStorageBufferOffsetAlignment))
	return (n + a - 1) / a * a
}

// planKey encodes everything a plan depends on: ops, shapes, wiring, the
// identity of every backend buffer, the outputs. Scalars that only reach
// kernel parameters (positions, rows, scales, input values) are left out.
func (b *Backend) planKey(g *tensor.Graph, outs []tensor.T) string {
	key := make([]byte, 0, 32*len(g.Nodes)+8*len(outs))
	u := func(v uint64) { key = binary.AppendUvarint(key, v) }
	ref := func(t tensor.T) {
		if n := t.Node(); n >= 0 {
			u(uint64(n)<<1 | 1)
			return
		}
		if buf := b.buf(t); buf != nil {
			u(buf.serial << 1)
			return
		}
		u(0)
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		u(uint64(n.Op))
		u(uint64(len(n.In)))
		for _, t := range n.In {
			ref(t)
		}
		u(uint64(len(n.Shape)))
		for _, d := range n.Shape {
			u(uint64(d))
		}
		switch n.Op {
		case tensor.OpInput:
			if n.Ints != nil {
				u(1)
			}
		case tensor.OpSlice:
			u(uint64(n.I[0]))
			if n.I[1] == 0 { // leading rows: a view (see newCompiler)
				u(0)
			} else {
				u(1)
			}
		case tensor.OpRoPE:
			u(uint64(n.Rope.Dims))
		case tensor.OpAttention:
			// the split buffer is sized for the worst case of the shape;
			// spans bind one more input
			if len(n.Attn.Spans) > 0 && !n.Attn.Bidirectional {
				u(1)
			} else {
				u(0)
			}
		}
	}
	u(0xffff)
	for _, t := range outs {
		ref(t)
	}
	return string(key)
}

// compile builds a plan for g (see planKey for what it may depend on).
func (b *Backend) compile(g *tensor.Graph, outs []tensor.T) (*plan, error) {
	c := newCompiler(b, g, outs)
	if err := c.build(); err != nil {
		return nil, err
	}
	p := &plan{readback: map[tensor.T]readRegion{}, uses: map[uint64]bool{}}
	for _, ks := range c.kernels {
		pipe, err := b.pipeline(ks.label, ks.src)
		if err != nil {
			return nil, err
		}
		p.kernels = append(p.kernels, &kernel{label: ks.label, pipe: pipe, ops: ks.ops, params: ks.params, grid: ks.grid})
	}
	err := c.outputs(p, outs)
	if err != nil {
		return nil, err
	}
	p.inputs = c.inputs
	for _, in := range c.inputs {
		p.inBytes = max(p.inBytes, in.off+in.size)
	}
	if p.slots, err = c.allocate(p); err != nil {
		return nil, err
	}
	for _, k := range p.kernels {
		for _, o := range k.ops {
			if o.buf != nil {
				p.uses[o.buf.serial] = true
			}
		}
	}
	for _, o := range p.outs {
		if o.src.buf != nil {
			p.uses[o.src.buf.serial] = true
		}
	}
	p.params = make([]byte, uint64(max(1, len(p.kernels)))*b.paramStride())
	p.inData = make([]byte, max(16, p.inBytes))
	return p, nil
}

// outputs records where each output is copied for Read.
func (c *compiler) outputs(p *plan, outs []tensor.T) error {
	for _, t := range outs {
		if _, dup := p.readback[t]; dup {
			continue
		}
		var src operand
		var off uint64
		elems := tensor.Elements(c.g.Shape(t))
		if n := t.Node(); n >= 0 {
			if c.g.Nodes[n].Op == tensor.OpStore {
				return fmt.Errorf("output %d is a Store node; read the buffer it writes", n)
			}
			if c.g.Nodes[n].Ints != nil {
				return fmt.Errorf("output %d holds integers; only float results can be read", n)
			}
		}
		o, err := c.f32(t)
		if err != nil {
			return fmt.Errorf("output: %w", err)
		}
		src = o
		if o.kind == opInput {
			off = c.inputs[o.input].off
		}
		size := uint64(elems) * 4
		p.outs = append(p.outs, outCopy{src: src, off: off, dst: p.rbBytes, size: size})
		p.readback[t] = readRegion{off: p.rbBytes, elems: elems}
		p.rbBytes += (size + 255) &^ 255
	}
	return nil
}

// allocate assigns pool slots to node results by liveness: a slot is
// reused once the last kernel reading its value has run. Outputs live to
// the end. It returns the bytes each slot needs.
func (c *compiler) allocate(p *plan) ([]uint64, error) {
	last := map[int]int{}
	for k, kn := range p.kernels {
		for _, o := range kn.ops {
			if o.kind == opSlot {
				last[o.node] = k
			}
		}
	}
	for _, o := range p.outs {
		if o.src.kind == opSlot {
			last[o.src.node] = len(p.kernels)
		}
	}
	var sizes []uint64
	var free []int
	slotOf := map[int]int{}
	take := func(size uint64) int {
		best := -1
		for i, s := range free {
			if sizes[s] >= size && (best < 0 || sizes[s] < sizes[free[best]]) {
				best = i
			}
		}
		if best < 0 && len(free) > 0 { // grow the largest free slot
			best = 0
			for i, s := range free {
				if sizes[s] > sizes[free[best]] {
					best = i
				}
			}
		}
		if best < 0 {
			sizes = append(sizes, size)
			return len(sizes) - 1
		}
		s := free[best]
		free = append(free[:best], free[best+1:]...)
		sizes[s] = max(sizes[s], size)
		return s
	}
	for k, kn := range p.kernels {
		for i := range kn.ops {
			o := &kn.ops[i]
			if o.kind == opSlot {
				s, ok := slotOf[o.node]
				if !ok {
					if !o.write {
						return nil, fmt.Errorf("internal: kernel %d (%s) reads node %d before any kernel writes it", k, kn.label, o.node)
					}
					s = take(o.size)
					slotOf[o.node] = s
				}
				o.slot = s
			}
		}
		var done []int
		for _, o := range kn.ops {
			if o.kind == opSlot && last[o.node] == k {
				done = append(done, o.node)
				last[o.node] = -1
			}
		}
		sort.Ints(done)
		for _, n := range done {
			free = append(free, slotOf[n])
		}
	}
	for i := range p.outs {
		if o := &p.outs[i]; o.src.kind == opSlot {
			s, ok := slotOf[o.src.node]
			if !ok {
				return nil, fmt.Errorf("internal: output node %d is never written", o.src.node)
			}
			o.src.slot = s
		}
	}
	return sizes, nil
}

// hostInts resolves an integer tensor (an Input, possibly reshaped or
// sliced) to its host data: integer tensors only come from the host.
func hostInts(g *tensor.Graph, t tensor.T) ([]int32, error) {
	n := t.Node()
	if n < 0 {
		return nil, fmt.Errorf("integer operand %v is not a graph input", t)
	}
	node := &g.Nodes[n]
	switch node.Op {
	case tensor.OpInput:
		if node.Ints == nil {
			return nil, fmt.Errorf("node %d holds floats where integers are needed", n)
		}
		return node.Ints, nil
	case tensor.OpReshape:
		return hostInts(g, node.In[0])
	case tensor.OpSlice:
		in, err := hostInts(g, node.In[0])
		if err != nil {
			return nil, err
		}
		shape := g.Shape(node.In[0])
		axis, start, end := node.I[0], node.I[1], node.I[2]
		if axis == 0 {
			row := tensor.Elements(shape[1:])
			return in[start*row : end*row], nil
		}
		cols := shape[len(shape)-1]
		var out []int32
		for r := 0; r < len(in); r += cols {
			out = append(out, in[r+start:r+end]...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("node %d (%v) does not hold integers", n, node.Op)
}

// ropeTable computes (cos, sin)·Scale for every position and rotary pair,
// exactly as the cpu backend does, as little-endian float32 pairs.
func ropeTable(pos []int32, r *tensor.Rope, dst []byte) {
	half := r.Dims / 2
	for t, p := range pos {
		for j := 0; j < half; j++ {
			a := float32(p) * r.InvFreq[j]
			c := float32(math.Cos(float64(a))) * r.Scale
			s := float32(math.Sin(float64(a))) * r.Scale
			o := (t*half + j) * 8
			binary.LittleEndian.PutUint32(dst[o:], math.Float32bits(c))
			binary.LittleEndian.PutUint32(dst[o+4:], math.Float32bits(s))
		}
	}
}
