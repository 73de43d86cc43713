// Package cpu is the reference backend: plain Go, float32 arithmetic,
// parallel across cores. Every other backend is tested against it.
package cpu

import (
	"context"
	"fmt"
	"runtime"

	"hearth/engine/tensor"
)

// Backend runs graphs on the CPU. Weights stay where the loader put them
// (usually an mmap'd checkpoint) in their stored dtype; matmuls decode rows
// on the fly, so memory use is the checkpoint's size plus activations.
type Backend struct {
	threads int
	bufs    []buffer

	// results of the last Run, by node index
	vals [][]float32
	ints [][]int32
}

type buffer struct {
	w     *tensor.Weight // uploaded weight, or nil
	data  []float32      // Alloc'd buffer
	shape []int
	live  bool
}

// Options configure the backend.
type Options struct {
	Threads int // worker goroutines; 0 means runtime.NumCPU()
}

// New makes a CPU backend.
func New(opt Options) *Backend {
	t := opt.Threads
	if t <= 0 {
		t = runtime.NumCPU()
	}
	return &Backend{threads: t}
}

// Name is "cpu".
func (b *Backend) Name() string { return "cpu" }

// Threads is the number of worker goroutines.
func (b *Backend) Threads() int { return b.threads }

// Upload keeps a reference to w's host data; nothing is copied.
func (b *Backend) Upload(w tensor.Weight) (tensor.T, error) {
	switch {
	case w.Quantized():
		if b := w.Quant.Bits; b < 2 || b > 8 || b == 7 {
			return tensor.T{}, fmt.Errorf("upload %q: %d-bit quantization is not supported (2, 3, 4, 5, 6 and 8 are)", w.Name, w.Quant.Bits)
		}
		if len(w.Shape) != 2 {
			return tensor.T{}, fmt.Errorf("upload %q: quantized weight of shape %v, want 2-D", w.Name, w.Shape)
		}
	case w.DType == tensor.F32 || w.DType == tensor.F16 || w.DType == tensor.BF16:
		if len(w.Data) != tensor.Elements(w.Shape)*w.DType.Size() {
			return tensor.T{}, fmt.Errorf("upload %q: %d bytes for %v %v", w.Name, len(w.Data), w.DType, w.Shape)
		}
	default:
		return tensor.T{}, fmt.Errorf("upload %q: dtype %v is not a weight type (F32, F16, BF16 or MLX-quantized U32)", w.Name, w.DType)
	}
	wc := w
	buf := buffer{w: &wc, shape: append([]int(nil), w.Shape...), live: true}
	if len(w.Shape) == 1 && !w.Quantized() {
		// Vectors (norm weights, biases) are tiny: widen them once so
		// elementwise ops read float32 directly.
		buf.data = make([]float32, w.Shape[0])
		tensor.Float32(w.DType, w.Data, 0, buf.data)
	}
	return b.push(buf), nil
}

// Alloc makes a zeroed float32 buffer.
func (b *Backend) Alloc(shape []int) (tensor.T, error) {
	n := tensor.Elements(shape)
	if n < 0 {
		return tensor.T{}, fmt.Errorf("alloc: bad shape %v", shape)
	}
	return b.push(buffer{data: make([]float32, n), shape: append([]int(nil), shape...), live: true}), nil
}

func (b *Backend) push(buf buffer) tensor.T {
	for i := range b.bufs {
		if !b.bufs[i].live {
			b.bufs[i] = buf
			return tensor.BufferT(i)
		}
	}
	b.bufs = append(b.bufs, buf)
	return tensor.BufferT(len(b.bufs) - 1)
}

// Free forgets a buffer.
func (b *Backend) Free(t tensor.T) {
	if i := t.Buffer(); i >= 0 && i < len(b.bufs) {
		b.bufs[i] = buffer{}
	}
}

// Shape of a buffer.
func (b *Backend) Shape(t tensor.T) []int {
	if i := t.Buffer(); i >= 0 && i < len(b.bufs) {
		return b.bufs[i].shape
	}
	return nil
}

// Close frees every buffer.
func (b *Backend) Close() error {
	b.bufs, b.vals, b.ints = nil, nil, nil
	return nil
}

// Read copies a node result of the last Run, or an Alloc'd buffer, to dst.
func (b *Backend) Read(t tensor.T, dst []float32) error {
	var src []float32
	switch {
	case t.Node() >= 0 && t.Node() < len(b.vals):
		src = b.vals[t.Node()]
	case t.Buffer() >= 0 && t.Buffer() < len(b.bufs) && b.bufs[t.Buffer()].w == nil:
		src = b.bufs[t.Buffer()].data
	}
	if src == nil {
		return fmt.Errorf("read: %v has no float data from the last run", t)
	}
	if len(dst) != len(src) {
		return fmt.Errorf("read: dst has %d elements, tensor has %d", len(dst), len(src))
	}
	copy(dst, src)
	return nil
}

// Run executes the graph's nodes in order.
func (b *Backend) Run(ctx context.Context, g *tensor.Graph, outs ...tensor.T) error {
	if err := g.Err(); err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	b.vals = make([][]float32, len(g.Nodes))
	b.ints = make([][]int32, len(g.Nodes))
	for i := range g.Nodes {
		if i%16 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := b.exec(g, i); err != nil {
			return fmt.Errorf("node %d (%v): %w", i, g.Nodes[i].Op, err)
		}
	}
	return nil
}

// f32 returns the float data of a node or Alloc'd buffer input.
func (b *Backend) f32(t tensor.T) []float32 {
	if n := t.Node(); n >= 0 {
		return b.vals[n]
	}
	if i := t.Buffer(); i >= 0 {
		return b.bufs[i].data
	}
	return nil
}

// rows is a source of float32 rows: a weight (any stored dtype) or a
// float32 array.
type rows struct {
	w    *tensor.Weight
	data []float32
	cols int
}

func (b *Backend) rowsOf(t tensor.T, cols int) (rows, error) {
	if i := t.Buffer(); i >= 0 && b.bufs[i].data == nil {
		return rows{w: b.bufs[i].w, cols: cols}, nil
	}
	d := b.f32(t)
	if d == nil {
		return rows{}, fmt.Errorf("input %v has no data", t)
	}
	return rows{data: d, cols: cols}, nil
}

// row decodes row r into dst (len cols), or returns a view when the data is
// already float32.
func (r rows) row(i int, dst []float32) []float32 {
	if r.w == nil {
		return r.data[i*r.cols : (i+1)*r.cols]
	}
	r.w.DecodeRow(i, dst)
	return dst
}

func (b *Backend) exec(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	switch n.Op {
	case tensor.OpInput:
		if n.Ints != nil {
			b.ints[i] = n.Ints
		} else {
			b.vals[i] = n.Floats
		}
	case tensor.OpEmbed:
		return b.embed(g, i)
	case tensor.OpMatMul:
		return b.matmul(g, i)
	case tensor.OpAdd, tensor.OpMul:
		b.vals[i] = binary(n.Op, b.f32(n.In[0]), b.f32(n.In[1]))
	case tensor.OpScale:
		x := b.f32(n.In[0])
		out := make([]float32, len(x))
		s := n.F[0]
		for j, v := range x {
			out[j] = v * s
		}
		b.vals[i] = out
	case tensor.OpSiLU, tensor.OpGELUTanh, tensor.OpGELU, tensor.OpTanhCap:
		b.vals[i] = unary(n.Op, b.f32(n.In[0]), n.F[0])
	case tensor.OpSoftmax:
		x := b.f32(n.In[0])
		out := append([]float32(nil), x...)
		c := n.Shape[len(n.Shape)-1]
		for r := 0; r < len(out); r += c {
			softmax(out[r : r+c])
		}
		b.vals[i] = out
	case tensor.OpRMSNorm, tensor.OpLayerNorm:
		return b.norm(g, i)
	case tensor.OpRoPE:
		b.vals[i] = rope(b.f32(n.In[0]), b.ints[n.In[1].Node()], n.Shape, n.Rope)
	case tensor.OpReshape:
		if b.vals[i] = b.f32(n.In[0]); b.vals[i] == nil {
			if in := n.In[0].Node(); in >= 0 {
				b.ints[i] = b.ints[in]
			}
		}
	case tensor.OpSlice:
		b.vals[i] = slice(b.f32(n.In[0]), g.Shape(n.In[0]), n.I)
	case tensor.OpStore:
		dst := b.f32(n.In[0])
		src := b.f32(n.In[1])
		if dst == nil || src == nil {
			return fmt.Errorf("store needs a float buffer and a float source")
		}
		rowLen := tensor.Elements(n.Shape[1:])
		copy(dst[n.I[0]*rowLen:], src)
	case tensor.OpAttention:
		b.vals[i] = b.attention(g, n)
	default:
		return fmt.Errorf("op %v is not implemented by the cpu backend", n.Op)
	}
	return nil
}

func (b *Backend) embed(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	hidden := n.Shape[1]
	src, err := b.rowsOf(n.In[0], hidden)
	if err != nil {
		return err
	}
	vocab := g.Shape(n.In[0])[0]
	ids := b.ints[n.In[1].Node()]
	out := make([]float32, len(ids)*hidden)
	for t, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("token id %d outside the vocabulary [0, %d)", id, vocab)
		}
		dst := out[t*hidden : (t+1)*hidden]
		if r := src.row(int(id), dst); &r[0] != &dst[0] {
			copy(dst, r)
		}
	}
	b.vals[i] = out
	return nil
}

// parallel runs f over [0, n) split into contiguous chunks, one per thread.
func (b *Backend) parallel(n int, f func(lo, hi int)) {
	t := min(b.threads, n)
	if t <= 1 {
		f(0, n)
		return
	}
	done := make(chan struct{}, t)
	for w := 0; w < t; w++ {
		lo, hi := w*n/t, (w+1)*n/t
		go func() {
			f(lo, hi)
			done <- struct{}{}
		}()
	}
	for w := 0; w < t; w++ {
		<-done
	}
}
