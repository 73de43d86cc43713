// Package cpu is the reference backend: float32 arithmetic, parallel across
// cores on a persistent worker pool, with SIMD kernels (AVX-512 or AVX2/FMA
// assembly on amd64) for the hot loops and pure-Go kernels everywhere else.
// Every other backend is tested against it.
//
// Weights stay where the loader put them (usually an mmap'd checkpoint) in
// their stored dtype; matmul kernels dequantize inside their loops, so
// memory use is the checkpoint's size plus activations. Node results live
// in one arena planned once per graph shape, so a decode step allocates
// nothing.
package cpu

import (
	"context"
	"fmt"
	"time"

	"hearth/engine/tensor"
)

// Backend runs graphs on the CPU. It is not safe for concurrent use: one
// goroutine owns it (the engine's rule for every backend).
type Backend struct {
	threads int
	k       *kernels
	int8    bool
	pool    *pool
	bufs    []buffer

	// planning: cached plans, the arena they share, scratch for signatures
	plans []*plan
	sig   []int32
	runs  uint64
	arena []float32

	// results of the last Run, by node index
	vals [][]float32
	ints [][]int32
	cur  *plan

	scratch scratch
	tasks   tasks
	closed  bool
	prof    *Profile // per-node timer (SetProfile), or nil
}

type buffer struct {
	w       *tensor.Weight // uploaded weight, or nil
	m       *mat           // the weight as the matmul kernels see it (2-D)
	experts []*mat         // a stacked 3-D weight, one mat per expert
	data    []float32      // Alloc'd buffer, or a widened vector weight
	kv      *kvq           // a quantized KV buffer (AllocKV)
	shape   []int
	live    bool
}

// Options configure the backend.
type Options struct {
	// Threads is the number of threads that run kernels (the caller plus
	// Threads-1 workers); 0 means DefaultThreads().
	Threads int
	// Kernels names the kernel set: "" picks the fastest this CPU runs
	// (KernelSets lists them, fastest first); "generic" is pure Go.
	Kernels string
	// Int8Activations quantizes the input of each quantized matrix–vector
	// product to int8 per block of 32 and multiplies with integer dot
	// products: VNNI on the avx512vnni set (4- and 8-bit weights),
	// vpmaddubsw on the avx2 set (4-bit weights in groups of 32 or 64).
	// Prefill's matrix–matrix products (from gemmMinRows input rows) run
	// the int8 GEMM too (gemm_i8.go: blocks of 64 on avx512vnni where the
	// group size allows, else 32; 4-bit weights only on avx2).
	// It is faster and not exact: its error against the oracle is recorded
	// in docs/design/cpu.md. Other weights, and the generic set, stay exact
	// (Int8Activations reports whether the set has int8 kernels at all).
	Int8Activations bool
}

// New makes a CPU backend. It panics when opt.Kernels names a kernel set
// this CPU cannot run: callers that take the name from a user check it
// against KernelSets first.
func New(opt Options) *Backend {
	t := opt.Threads
	if t <= 0 {
		t = DefaultThreads()
	}
	k, err := kernelsNamed(opt.Kernels)
	if err != nil {
		panic("cpu.New: " + err.Error())
	}
	b := &Backend{threads: t, k: k, int8: opt.Int8Activations && k.i8 != nil, pool: newPool(t), scratch: scratch{workers: make([]workerScratch, t)}}
	if p := nextProfile.Swap(nil); p != nil {
		b.SetProfile(p)
	}
	return b
}

// Name is "cpu".
func (b *Backend) Name() string { return "cpu" }

// Threads is the number of threads kernels run on.
func (b *Backend) Threads() int { return b.threads }

// Kernels names the kernel set in use ("avx512", "avx2" or "generic").
func (b *Backend) Kernels() string { return b.k.name }

// Int8Activations reports whether quantized matrix–vector products run on
// int8 activations (Options.Int8Activations on a set with int8 kernels).
func (b *Backend) Int8Activations() bool { return b.int8 }

// Upload keeps a reference to w's host data; nothing is copied, except that
// 1-D weights (norm scales, biases) are widened to float32 once.
func (b *Backend) Upload(w tensor.Weight) (tensor.T, error) {
	switch {
	case w.Quantized():
		if b := w.Quant.Bits; b < 2 || b > 8 || b == 7 {
			return tensor.T{}, fmt.Errorf("upload %q: %d-bit quantization is not supported (2, 3, 4, 5, 6 and 8 are)", w.Name, w.Quant.Bits)
		}
		if len(w.Shape) != 2 && len(w.Shape) != 3 {
			return tensor.T{}, fmt.Errorf("upload %q: quantized weight of shape %v, want 2-D (or 3-D stacked experts)", w.Name, w.Shape)
		}
		q := w.Quant
		cols := w.Shape[len(w.Shape)-1]
		if q.GroupSize <= 0 || cols%q.GroupSize != 0 || cols*q.Bits%32 != 0 {
			return tensor.T{}, fmt.Errorf("upload %q: shape %v does not fit %d-bit quantization with group size %d", w.Name, w.Shape, q.Bits, q.GroupSize)
		}
		groups := tensor.Elements(w.Shape) / q.GroupSize
		if len(w.Data) != tensor.Elements(w.Shape)*q.Bits/8 || len(w.Scales) != groups*w.ScaleDType.Size() || len(w.Biases) != len(w.Scales) || w.ScaleDType.Size() == 0 {
			return tensor.T{}, fmt.Errorf("upload %q: buffers of %d, %d and %d bytes do not fit %v", w.Name, len(w.Data), len(w.Scales), len(w.Biases), w.Shape)
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
	if len(w.Shape) == 2 {
		buf.m = newMat(&wc)
	}
	if len(w.Shape) == 3 {
		buf.experts = expertMats(&wc)
	}
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

// Close stops the worker pool and frees every buffer.
func (b *Backend) Close() error {
	b.pool.close()
	b.closed = true
	b.bufs, b.vals, b.ints, b.arena, b.plans, b.cur = nil, nil, nil, nil, nil, nil
	b.scratch = scratch{workers: make([]workerScratch, b.threads)}
	return nil
}

// Read copies a result of the last Run (one of its outs), or an Alloc'd
// buffer, to dst.
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

// Run executes the graph's nodes in order. Results live in the backend's
// arena until the next Run; only outs are kept intact to the end.
func (b *Backend) Run(ctx context.Context, g *tensor.Graph, outs ...tensor.T) error {
	if err := g.Err(); err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	if b.closed {
		return fmt.Errorf("run: backend is closed")
	}
	var start time.Time
	if b.prof != nil {
		start = time.Now()
	}
	p := b.planFor(g, outs)
	b.cur = p
	if len(b.arena) < p.arena+arenaAlign {
		b.arena = alignedFloats(p.arena + arenaAlign)
	}
	nn := len(g.Nodes)
	if cap(b.vals) < nn {
		b.vals = make([][]float32, nn)
		b.ints = make([][]int32, nn)
	}
	b.vals, b.ints = b.vals[:nn], b.ints[:nn]
	for i := range b.vals {
		b.vals[i], b.ints[i] = nil, nil
	}
	for i := range g.Nodes {
		if s := p.slots[i]; s.kind == slotArena || s.kind == slotFused {
			b.vals[i] = b.arena[s.off : s.off+s.n : s.off+s.n]
		}
	}
	for i := range g.Nodes {
		if i%16 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		var t0 time.Time
		if b.prof != nil {
			t0 = time.Now()
		}
		if err := b.exec(g, i); err != nil {
			return fmt.Errorf("node %d (%v): %w", i, g.Nodes[i].Op, err)
		}
		if b.prof != nil {
			b.profNode(g, i, time.Since(t0))
		}
	}
	if b.prof != nil {
		b.profFinish(time.Since(start))
	}
	return nil
}

// alignedFloats makes a zeroed slice of n float32 whose first element is
// 64-byte aligned.
func alignedFloats(n int) []float32 {
	s := make([]float32, n+16)
	off := 0
	for addrOf(s[off:])%64 != 0 {
		off++
	}
	return s[off : off+n : off+n]
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
