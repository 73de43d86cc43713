package cpu

import (
	"fmt"
	"math"

	"hearth/engine/tensor"
)

// gemmMinRows is the number of input rows from which a MatMul runs as a
// blocked matrix–matrix product (weights dequantized once into panels)
// instead of one matrix–vector pass per row (weights dequantized in
// registers, once per row, but streamed from cache).
const gemmMinRows = 16

// kcBlock is the depth of one GEMM panel: a multiple of every MLX group
// size, and small enough that a B panel stays in L1.
const kcBlock = 256

// matmul runs node i, and with it the MatMuls of the same input that the
// plan fused into it: one preparation of the input, one parallel loop.
func (b *Backend) matmul(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	x := b.f32(n.In[0])
	if x == nil {
		return fmt.Errorf("matmul input has no data")
	}
	ws := g.Shape(n.In[1])
	k := ws[1]
	m := len(x) / k

	var mats [maxFused]*mat
	var outs [maxFused][]float32
	nm := 0
	add := func(j int) error {
		nj := &g.Nodes[j]
		w := nj.In[1]
		switch {
		case w.Buffer() >= 0 && b.bufs[w.Buffer()].m != nil:
			mats[nm] = b.bufs[w.Buffer()].m
		case w.Buffer() >= 0:
			return fmt.Errorf("matmul weight %v is not a 2-D uploaded weight", w)
		default:
			d := b.f32(w)
			if d == nil {
				return fmt.Errorf("matmul weight %v has no data", w)
			}
			b.tasks.nodeMats[nm] = floatMat(d, g.Shape(w)[0], g.Shape(w)[1])
			mats[nm] = &b.tasks.nodeMats[nm]
		}
		outs[nm] = b.vals[j]
		nm++
		return nil
	}
	if err := add(i); err != nil {
		return err
	}
	for _, j := range b.cur.fused[i] {
		if err := add(j); err != nil {
			return err
		}
	}
	if m >= gemmMinRows && !b.rowsTogetherWin(m, mats[:nm]) {
		b.gemm(x, m, k, mats[:nm], outs[:nm])
		return nil
	}
	b.matvec(x, m, k, mats[:nm], outs[:nm])
	return nil
}

// rowsTogetherWin reports whether m input rows (at least gemmMinRows) are
// better served by the several-rows matrix–vector kernels (qrows) than by
// the GEMM: while m is under one GEMM panel (nr rows) the GEMM pads it. On
// the avx512 sets (nr 32) a Llama-3.2-1B q4g64 batched decode step of 16
// rows runs 1.5× faster this way and one of 24 1.1× faster, while at 32
// the GEMM is ahead (docs/benchmarks.md, "Continuous batching"); on avx2
// (nr 16) nothing changes.
func (b *Backend) rowsTogetherWin(m int, mats []*mat) bool {
	if b.int8 || b.k.qrows == nil || m >= b.k.nr {
		return false
	}
	// every weight on a SIMD kernel, as the matrix–vector loop would find
	// them (its input summed per group of the first weight)
	t := mvTask{b: b, gs: mats[0].group}
	for _, w := range mats {
		if !w.quant || t.quantKernel(w) == nil {
			return false
		}
	}
	return true
}

// mvTask is the parallel loop of a matrix–vector product over the rows of
// one or more weights that share an input.
type mvTask struct {
	b      *Backend
	mats   [maxFused]*mat
	outs   [maxFused][]float32
	starts [maxFused + 1]int // cumulative row offsets of the weights
	nm     int
	m, k   int
	x      []float32 // the input rows
	xp     []float32 // the input rows permuted for the q4 kernel
	xsum   []float32 // per-group sums of each row, for group size gs
	gs     int
	// int8 activations (Options.Int8Activations): per row, the input
	// quantized per block of 32 in natural order (xq8) and permuted for
	// 4-bit weights (xq4), with block scales per dword lane
	xq4, xq8 []int8
	dv4, dv8 []float32
	i8       bool
	i8k      [maxFused]i8fn // each weight's int8 kernel, or nil
}

// mvChunks is how many chunks of a matrix–vector loop each thread takes
// on average. A decode step is about 80 such loops, each ending when its
// last chunk does, so chunks must be small enough that the threads finish
// close together, and large enough that each chunk's start (a new stream
// for the prefetchers, and a TLB miss) is paid rarely. Measured on
// Llama-3.2-1B int8 decode, 2 threads, weights on huge pages, workers
// spinning between loops (docs/design/cpu.md, "Where a decode step
// goes"): 8 per thread gives a step about 5% shorter than 16 or 32; 4
// is as fast as 8 on a quiet machine. (16 was the best choice while the
// workers parked between loops and joined each one late.)
const mvChunks = 8

// mvRows is how many weight rows a kernel call covers before the loop
// moves to the next input row, so the rows stay in cache across inputs.
const mvRows = 16

func (t *mvTask) run(_, lo, hi int) {
	for mi := 0; mi < t.nm; mi++ {
		a, z := max(lo, t.starts[mi]), min(hi, t.starts[mi+1])
		for r0 := a; r0 < z; r0 += mvRows {
			r1 := min(r0+mvRows, z)
			for xr := 0; xr < t.m; {
				if n := t.rowsTogether(mi, r0-t.starts[mi], r1-t.starts[mi], xr); n > 0 {
					xr += n
					continue
				}
				t.rows(mi, r0-t.starts[mi], r1-t.starts[mi], xr)
				xr++
			}
		}
	}
}

// rows computes rows [r0, r1) of weight mi for input row xr.
func (t *mvTask) rows(mi, r0, r1, xr int) {
	m, k := t.mats[mi], t.b.k
	x := t.x[xr*t.k : (xr+1)*t.k]
	out := t.outs[mi][xr*m.rows+r0 : xr*m.rows+r1]
	switch {
	case m.f != nil:
		for r := r0; r < r1; r++ {
			out[r-r0] = k.dot(x, m.f[r*m.cols:(r+1)*m.cols])
		}
	case !m.quant:
		a := dargs{w: m.data[r0*m.rowBytes : r1*m.rowBytes], dt: m.dt, x: x, out: out, rows: r1 - r0, cols: m.cols}
		k.dense(a)
	case t.i8k[mi] != nil:
		groups := m.cols / m.group
		a := i8args{
			w:      m.data[r0*m.rowBytes : r1*m.rowBytes],
			scales: m.scales[r0*groups*2 : r1*groups*2],
			biases: m.biases[r0*groups*2 : r1*groups*2],
			xsum:   t.xsum[xr*groups:],
			out:    out,
			rows:   r1 - r0, bits: m.bits, group: m.group,
		}
		switch {
		case m.bits == 4 && t.k%128 == 0 && !t.b.k.i8half:
			a.xq, a.dv, a.chunks = t.xq4[xr*t.k:(xr+1)*t.k], t.dv4[xr*t.k/8:(xr+1)*t.k/8], t.k/128
		case m.bits == 4:
			a.xq, a.dv, a.chunks, a.half = t.xq4[xr*t.k:(xr+1)*t.k], t.dv4[xr*t.k/8:(xr+1)*t.k/8], t.k/64, true
		default:
			a.xq, a.dv, a.chunks = t.xq8[xr*t.k:(xr+1)*t.k], t.dv8[xr*t.k/4:(xr+1)*t.k/4], t.k/64
		}
		i8call(t.i8k[mi], a)
	default:
		kern := t.quantKernel(m)
		if kern == nil {
			qmvGo(m, x, out, r0, r1)
			return
		}
		groups := m.cols / m.group
		xs := x
		if m.bits == 4 && k.perm > 0 {
			xs = t.xp[xr*t.k : (xr+1)*t.k]
		}
		a := qargs{
			w:      m.data[r0*m.rowBytes : r1*m.rowBytes],
			scales: m.scales[r0*groups*2 : r1*groups*2],
			biases: m.biases[r0*groups*2 : r1*groups*2],
			f16:    m.sdt == tensor.F16,
			x:      xs, xsum: t.xsum[xr*groups : (xr+1)*groups],
			out:  out,
			rows: r1 - r0, groups: groups, group: m.group,
		}
		kern(a)
	}
}

// rowsTogether computes rows [r0, r1) of weight mi for the next 4 or 2
// input rows from xr with one kernel call (q4rows), and returns how many
// it took; 0 when the set or the weight has no such kernel. Decoding
// several sequences at once (engine.Model.ForwardBatch) is this case:
// each weight block is unpacked once for all of them.
func (t *mvTask) rowsTogether(mi, r0, r1, xr int) int {
	m, k := t.mats[mi], t.b.k
	if k.qrows == nil || t.m-xr < 2 || t.i8k[mi] != nil || t.quantKernel(m) == nil {
		return 0
	}
	n := 2
	if t.m-xr >= 4 {
		n = 4
	}
	x := t.x
	if m.bits == 4 && k.perm > 0 {
		x = t.xp
	}
	groups := m.cols / m.group
	a := qargs{
		w:      m.data[r0*m.rowBytes : r1*m.rowBytes],
		scales: m.scales[r0*groups*2 : r1*groups*2],
		biases: m.biases[r0*groups*2 : r1*groups*2],
		f16:    m.sdt == tensor.F16,
		x:      x[xr*t.k:], xsum: t.xsum[xr*groups:],
		out:  t.outs[mi][xr*m.rows+r0:],
		rows: r1 - r0, groups: groups, group: m.group,
		inputs: n, xstride: t.k, ostride: m.rows,
	}
	if k.qrows(a, m.bits) {
		return n
	}
	if n == 4 { // the set may take pairs only
		a.inputs = 2
		if k.qrows(a, m.bits) {
			return 2
		}
	}
	return 0
}

// quantKernel is the SIMD kernel for m, or nil when m needs the generic
// loop (other bit widths, f32 scales, or a group size the input was not
// summed for).
func (t *mvTask) quantKernel(m *mat) func(qargs) {
	if m.group != t.gs || m.group%32 != 0 || (m.sdt != tensor.BF16 && m.sdt != tensor.F16) {
		return nil
	}
	switch m.bits {
	case 4:
		return t.b.k.q4
	case 8:
		return t.b.k.q8
	}
	return nil
}

// i8Kernel is the int8-activation kernel for m, or nil.
func (t *mvTask) i8Kernel(m *mat) i8fn {
	if !m.quant || m.group != t.gs || (m.sdt != tensor.BF16 && m.sdt != tensor.F16) {
		return nil
	}
	if m.cols%64 != 0 {
		return nil
	}
	half := m.bits == 4 && (m.cols%128 != 0 || t.b.k.i8half)
	return t.b.k.i8[i8key{m.bits, m.group, m.sdt == tensor.F16, half}]
}

func (b *Backend) matvec(x []float32, m, k int, mats []*mat, outs [][]float32) {
	t := &b.tasks.mv
	*t = mvTask{b: b, nm: len(mats), m: m, k: k, x: x, i8: b.int8}
	for i, w := range mats {
		t.mats[i], t.outs[i] = w, outs[i]
		t.starts[i+1] = t.starts[i] + w.rows
		if w.quant && t.gs == 0 {
			t.gs = w.group
		}
	}
	if t.i8 {
		for i, w := range mats {
			t.i8k[i] = t.i8Kernel(w)
		}
	}
	if t.gs > 0 && t.gs%32 == 0 {
		groups := k / t.gs
		t.xsum = grow(&b.scratch.xsum, m*groups+4)
		clear(t.xsum[m*groups:])
		for r := 0; r < m; r++ {
			row := x[r*k : (r+1)*k]
			for g := 0; g < groups; g++ {
				var s float32
				for _, v := range row[g*t.gs : (g+1)*t.gs] {
					s += v
				}
				t.xsum[r*groups+g] = s
			}
		}
		needPerm := false
		for i, w := range mats {
			needPerm = needPerm || (w.bits == 4 && t.i8k[i] == nil && t.quantKernel(w) != nil)
		}
		if b.k.perm > 0 && needPerm {
			t.xp = grow(&b.scratch.xp, m*k)
			permute(x, t.xp, b.k.perm)
		}
		if t.i8 && k%64 == 0 {
			t.quantizeInput(&b.scratch)
		}
	}
	total := t.starts[t.nm]
	b.pool.parallel(total, b.pool.grainFor(total, mvChunks, mvRows), t)
	*t = mvTask{}
}

// roundMagic is 1.5·2²³: adding it to a float32 of magnitude below 2²²
// leaves the value rounded to an integer (half to even) in the low mantissa
// bits of roundMagicBits.
const (
	roundMagic     = 12582912
	roundMagicBits = 0x4B400000
)

// quantizeInput fills xq8, xq4, dv8 and dv4 from the input rows: per block
// of 32, d = max|x|/127 and q = x·(127/max|x|) rounded half to even.
func (t *mvTask) quantizeInput(s *scratch) {
	n := t.m * t.k
	t.xq8, t.xq4 = growI8(&s.xq8, n), growI8(&s.xq4, n)
	t.dv8, t.dv4 = grow(&s.dv8, n/4), grow(&s.dv4, n/8)
	// 4-bit layout: within each chunk (128, or 64 when the row is not a
	// multiple of 128 or the set's kernels take 64), the even elements,
	// then the odd ones
	c4 := 128
	if t.k%128 != 0 || t.b.k.i8half {
		c4 = 64
	}
	for r := 0; r < t.m; r++ {
		x := t.x[r*t.k : (r+1)*t.k]
		q := t.xq8[r*t.k : (r+1)*t.k]
		dv8, dv4 := t.dv8[r*t.k/4:(r+1)*t.k/4], t.dv4[r*t.k/8:(r+1)*t.k/8]
		q4 := t.xq4[r*t.k : (r+1)*t.k]
		if f := t.b.k.quantI8; f != nil {
			f(x, q, q4, dv8, dv4, c4)
			continue
		}
		for b := 0; b < t.k/32; b++ {
			blk := x[b*32 : b*32+32]
			var amax float32
			for _, v := range blk {
				if a := math.Float32frombits(math.Float32bits(v) &^ (1 << 31)); a > amax {
					amax = a
				}
			}
			d, inv := amax/127, float32(0)
			if amax > 0 {
				inv = 127 / amax
			}
			qb := q[b*32 : b*32+32]
			for i, v := range blk {
				// adding 1.5·2²³ rounds to an integer, half to even, in
				// the low mantissa bits; |v·inv| ≤ 127 needs no clamp
				qb[i] = int8(int32(math.Float32bits(v*inv+roundMagic)) - roundMagicBits)
			}
			for l := 0; l < 8; l++ { // 64-element chunk c = b/2: lanes 8(b%2)..
				dv8[(b/2)*16+(b%2)*8+l] = d
			}
			for l := 0; l < 4; l++ {
				// 128-element chunk c = b/4: lanes 4(b%4)...; a 64-element
				// chunk b/2 (8 lanes): lanes 4(b%2)...: the same offsets
				dv4[b*4+l] = d
			}
		}
		for c := 0; c < t.k; c += c4 {
			for j := 0; j < c4/2; j++ {
				q4[c+j] = q[c+2*j]
				q4[c+c4/2+j] = q[c+2*j+1]
			}
		}
	}
}

// permute copies x into dst with each block of p elements reordered: even
// positions first, then odd ones.
func permute(x, dst []float32, p int) {
	h := p / 2
	for base := 0; base+p <= len(x); base += p {
		blk, out := x[base:base+p], dst[base:base+p]
		for j := 0; j < h; j++ {
			out[j] = blk[2*j]
			out[h+j] = blk[2*j+1]
		}
	}
}

// gemmTask is the parallel loop of a blocked matrix–matrix product over
// tiles of mr weight rows (of one or more weights sharing the input). Each
// tile is dequantized, kcBlock columns at a time, into row-major scratch
// (exactly DecodeRow's values, each weight element once per MatMul), then
// multiplied with every panel of the packed input.
type gemmTask struct {
	b      *Backend
	mats   [maxFused]*mat
	outs   [maxFused][]float32
	tiles  [maxFused + 1]int // cumulative mr-row tile counts, in whole groups
	nm     int
	m, k   int
	panels int       // nr-row panels of the input
	xt     []float32 // the input packed as [panel][k][nr]
}

// gemmGroup is how many weight tiles a GEMM work item dequantizes
// together: each panel of the input then stays in L1 while the kernel runs
// over all of them (the dequantized tiles sit in L2).
const gemmGroup = 8

func (t *gemmTask) run(w, lo, hi int) {
	kern := t.b.k
	mr, nr := kern.mr, kern.nr
	ws := t.b.scratch.worker(w)
	mpad := t.panels * nr
	a := grow(&ws.tile, gemmGroup*mr*kcBlock)
	strip := grow(&ws.strip, gemmGroup*mr*mpad)
	for item := lo; item < hi; item++ {
		// the item's tiles, all of one weight
		first := item * gemmGroup
		mi := 0
		for first >= t.tiles[mi+1] {
			mi++
		}
		m := t.mats[mi]
		last := min(first+gemmGroup, t.tiles[mi+1])
		r0 := (first - t.tiles[mi]) * mr
		rows := min((last-first)*mr, m.rows-r0)
		for k0 := 0; k0 < t.k; k0 += kcBlock {
			kc := min(kcBlock, t.k-k0)
			for i := 0; i < (last-first)*mr; i++ {
				dst := a[i*kc : (i+1)*kc]
				if i < rows {
					m.decodeSegWith(kern, r0+i, k0, dst)
				} else {
					clear(dst)
				}
			}
			for p := 0; p < t.panels; p++ {
				b := t.xt[p*t.k*nr+k0*nr : p*t.k*nr+(k0+kc)*nr]
				for tile := 0; tile < last-first; tile++ {
					kern.gemm(kc, a[tile*mr*kc:(tile+1)*mr*kc], kc, b, strip[tile*mr*mpad+p*nr:], mpad, k0 > 0)
				}
			}
		}
		// transpose the strip into the output, 8 tokens at a time so
		// reads and writes both stay on a few cache lines
		out := t.outs[mi]
		for t0 := 0; t0 < t.m; t0 += 8 {
			n := min(8, t.m-t0)
			for i := 0; i < rows; i++ {
				src := strip[i*mpad+t0 : i*mpad+t0+n]
				for j, v := range src {
					out[(t0+j)*m.rows+r0+i] = v
				}
			}
		}
	}
}

// packXTask packs input rows into panels of nr rows, transposed:
// [panel][k][nr], zero-padding the last panel.
type packXTask struct {
	x, xt    []float32
	m, k, nr int
}

func (t *packXTask) run(_, lo, hi int) {
	for p := lo; p < hi; p++ {
		dst := t.xt[p*t.k*t.nr : (p+1)*t.k*t.nr]
		for j := 0; j < t.nr; j++ {
			r := p*t.nr + j
			if r >= t.m {
				for kk := 0; kk < t.k; kk++ {
					dst[kk*t.nr+j] = 0
				}
				continue
			}
			for kk, v := range t.x[r*t.k : (r+1)*t.k] {
				dst[kk*t.nr+j] = v
			}
		}
	}
}

func (b *Backend) gemm(x []float32, m, k int, mats []*mat, outs [][]float32) {
	if b.int8 && b.gemmI8(x, m, k, mats, outs) {
		return
	}
	mr, nr := b.k.mr, b.k.nr
	panels := (m + nr - 1) / nr
	px := &b.tasks.packX
	*px = packXTask{x: x, xt: grow(&b.scratch.xt, panels*nr*k), m: m, k: k, nr: nr}
	b.pool.parallel(panels, 1, px)
	t := &b.tasks.gemm
	*t = gemmTask{b: b, nm: len(mats), m: m, k: k, panels: panels, xt: px.xt}
	for i, w := range mats {
		t.mats[i], t.outs[i] = w, outs[i]
		// whole groups per weight, so an item never spans two weights
		groups := ((w.rows+mr-1)/mr + gemmGroup - 1) / gemmGroup
		t.tiles[i+1] = t.tiles[i] + groups*gemmGroup
	}
	items := t.tiles[t.nm] / gemmGroup
	b.pool.parallel(items, b.pool.grainFor(items, 4, 1), t)
	*t = gemmTask{}
	*px = packXTask{}
}
