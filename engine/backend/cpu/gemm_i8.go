package cpu

import (
	"encoding/binary"
	"math"
)

// The int8-activation GEMM: prefill's MatMuls with Options.Int8Activations.
// The input rows are quantized once per MatMul, per block of ab elements
// (32, or 64 where every weight's group size allows and the set's kernel
// takes it): d = max|x|/127, q = x·(127/max|x|) rounded half to even,
// with the block's exact float sum kept for the bias term. Each work item
// unpacks one tile of nr weight rows into unsigned levels, one dword (4
// levels) per row and 4-element step, then runs the microkernel over every
// panel of mr tokens, gemmI8KC elements at a time (the tile's slice and
// the panel's stay in L1; the whole tile, nr·k bytes, in L2):
//
//	out[t, n] = Σ_blocks cvt(Σ_k q_w·q_x)·(scale[n]·d[t]) + bias[n]·Σx[t]
//
// Each weight element is unpacked once per MatMul. For 4-bit weights the
// levels of a step are the low (or high) nibbles of one dword of the row,
// so within every 8 elements the input is ordered even positions first,
// then odd (the permutation the quantizer writes).

// gemmI8KC is the depth (elements) of one microkernel call: a multiple of
// every activation block and of 8.
const gemmI8KC = 512

// gemmI8Task is the parallel loop of an int8-activation GEMM over tiles of
// nr weight rows (of one or more weights sharing the input).
type gemmI8Task struct {
	b      *Backend
	mats   [maxFused]*mat
	outs   [maxFused][]float32
	tiles  [maxFused + 1]int // cumulative nr-row tile counts
	nm     int
	m, k   int
	bits   int
	ab     int       // elements per activation block
	panels int       // mr-token panels of the input
	xq     []uint32  // [panel][step][mr]: 4 int8 each
	xd, xs []float32 // [panel][block][mr]: block scales, exact block sums
}

// gemmI8Block is the activation block for an int8 GEMM of mats (all
// quantized with the same bits), or 0 when the kernel set has no int8 GEMM
// for them, so the float GEMM runs.
func (k *kernels) gemmI8Block(mats []*mat) int {
	if k.gemmI8 == nil || len(mats) == 0 {
		return 0
	}
	bits, ab := mats[0].bits, 64
	if k.i8steps < 16 {
		ab = 32
	}
	for _, w := range mats {
		if !w.quant || w.bits != bits || w.group%32 != 0 || (bits == 8 && !k.i8gemm8) || (bits != 4 && bits != 8) {
			return 0
		}
		if w.group%64 != 0 {
			ab = 32
		}
	}
	return ab
}

// gemmI8 runs the int8-activation GEMM and reports whether it could.
func (b *Backend) gemmI8(x []float32, m, k int, mats []*mat, outs [][]float32) bool {
	ab := b.k.gemmI8Block(mats)
	if ab == 0 || k%ab != 0 {
		return false
	}
	mr, nr := b.k.i8mr, b.k.i8nr
	panels := (m + mr - 1) / mr
	blocks := k / ab
	q := &b.tasks.quantX
	*q = quantXTask{
		x: x, m: m, k: k, mr: mr, ab: ab, bits: mats[0].bits,
		xq: growU32(&b.scratch.gq, panels*mr*k/4),
		xd: grow(&b.scratch.gd, panels*mr*blocks), xs: grow(&b.scratch.gs, panels*mr*blocks),
	}
	b.pool.parallel(panels, b.pool.grainFor(panels, 2, 1), q)
	t := &b.tasks.gemmI8
	*t = gemmI8Task{b: b, nm: len(mats), m: m, k: k, bits: q.bits, ab: ab, panels: panels, xq: q.xq, xd: q.xd, xs: q.xs}
	for i, w := range mats {
		t.mats[i], t.outs[i] = w, outs[i]
		t.tiles[i+1] = t.tiles[i] + (w.rows+nr-1)/nr
	}
	items := t.tiles[t.nm]
	b.pool.parallel(items, b.pool.grainFor(items, 4, 1), t)
	*t = gemmI8Task{}
	*q = quantXTask{}
	return true
}

func (t *gemmI8Task) run(w, lo, hi int) {
	kern := t.b.k
	mr, nr := kern.i8mr, kern.i8nr
	ws := t.b.scratch.worker(w)
	blocks := t.k / t.ab
	tile := growU32(&ws.i8tile, t.k/4*nr)
	sc, bi := grow(&ws.i8sc, blocks*nr), grow(&ws.i8bi, blocks*nr)
	strip := grow(&ws.strip, t.panels*mr*nr)
	for item := lo; item < hi; item++ {
		mi := 0
		for item >= t.tiles[mi+1] {
			mi++
		}
		m := t.mats[mi]
		r0 := (item - t.tiles[mi]) * nr
		rows := min(nr, m.rows-r0)
		unpackTile(m, r0, rows, nr, t.ab, tile, sc, bi)
		for k0 := 0; k0 < t.k; k0 += gemmI8KC {
			kc := min(gemmI8KC, t.k-k0)
			b0 := k0 / t.ab
			for p := 0; p < t.panels; p++ {
				kern.gemmI8(kc/t.ab, t.ab/4, tile[k0/4*nr:], sc[b0*nr:], bi[b0*nr:],
					t.xq[(p*t.k+k0)*mr/4:], t.xd[(p*blocks+b0)*mr:], t.xs[(p*blocks+b0)*mr:],
					strip[p*mr*nr:(p+1)*mr*nr], k0 > 0)
			}
		}
		out := t.outs[mi]
		for r := 0; r < t.m; r++ {
			copy(out[r*m.rows+r0:r*m.rows+r0+rows], strip[r*nr:r*nr+rows])
		}
	}
}

// unpackTile writes rows [r0, r0+rows) of m into tile as unsigned levels,
// [step][nr] dwords of 4 levels (rows past the weight's end are zero), and
// each row's scale and bias per activation block of ab elements into sc
// and bi, [block][nr].
func unpackTile(m *mat, r0, rows, nr, ab int, tile []uint32, sc, bi []float32) {
	steps := m.cols / 4
	groups := m.cols / m.group
	for n := 0; n < nr; n++ {
		if n >= rows {
			for s := 0; s < steps; s++ {
				tile[s*nr+n] = 0
			}
			for blk := 0; blk < m.cols/ab; blk++ {
				sc[blk*nr+n], bi[blk*nr+n] = 0, 0
			}
			continue
		}
		row := m.data[(r0+n)*m.rowBytes : (r0+n+1)*m.rowBytes]
		if m.bits == 4 {
			for t8 := 0; t8 < steps/2; t8++ {
				v := binary.LittleEndian.Uint32(row[4*t8:])
				tile[2*t8*nr+n] = v & 0x0f0f0f0f
				tile[(2*t8+1)*nr+n] = v >> 4 & 0x0f0f0f0f
			}
		} else {
			for s := 0; s < steps; s++ {
				tile[s*nr+n] = binary.LittleEndian.Uint32(row[4*s:])
			}
		}
		for blk := 0; blk < m.cols/ab; blk++ {
			g := (r0+n)*groups + blk*ab/m.group
			sc[blk*nr+n], bi[blk*nr+n] = m.scale(g), m.bias(g)
		}
	}
}

// quantXTask quantizes the input rows per block of ab elements into panels
// of mr tokens: xq [panel][step][mr], 4 int8 a dword (for 4-bit weights, each 8
// elements' even positions in the first step, odd in the second), xd and
// xs [panel][block][mr]. Rows past m are zero.
type quantXTask struct {
	x      []float32
	xq     []uint32
	xd, xs []float32
	m, k   int
	mr, ab int
	bits   int
}

func (t *quantXTask) run(_, lo, hi int) {
	mr, k, ab := t.mr, t.k, t.ab
	blocks := k / ab
	for p := lo; p < hi; p++ {
		q := t.xq[p*mr*k/4 : (p+1)*mr*k/4]
		xd, xs := t.xd[p*blocks*mr:(p+1)*blocks*mr], t.xs[p*blocks*mr:(p+1)*blocks*mr]
		for i := 0; i < mr; i++ {
			r := p*mr + i
			if r >= t.m {
				for s := 0; s < k/4; s++ {
					q[s*mr+i] = 0
				}
				for blk := 0; blk < blocks; blk++ {
					xd[blk*mr+i], xs[blk*mr+i] = 0, 0
				}
				continue
			}
			row := t.x[r*k : (r+1)*k]
			for blk := 0; blk < blocks; blk++ {
				x := row[blk*ab : (blk+1)*ab]
				// four partial sums and maxima (of |x|'s bits, ordered as
				// the values are) keep the loop off one dependency chain
				var s0, s1, s2, s3 float32
				var m0, m1, m2, m3 uint32
				for e := 0; e+4 <= len(x); e += 4 {
					v := x[e : e+4 : e+4]
					s0, s1, s2, s3 = s0+v[0], s1+v[1], s2+v[2], s3+v[3]
					m0 = max(m0, math.Float32bits(v[0])&^(1<<31))
					m1 = max(m1, math.Float32bits(v[1])&^(1<<31))
					m2 = max(m2, math.Float32bits(v[2])&^(1<<31))
					m3 = max(m3, math.Float32bits(v[3])&^(1<<31))
				}
				sum, amax := (s0+s1)+(s2+s3), math.Float32frombits(max(m0, m1, m2, m3))
				inv := float32(0)
				if amax > 0 {
					inv = 127 / amax
				}
				xd[blk*mr+i], xs[blk*mr+i] = amax/127, sum
				first := blk * ab / 4 // the block's first step
				if t.bits == 4 {
					// per 8 elements: the even ones in one step, the odd
					// ones in the next
					for e := 0; e+8 <= len(x); e += 8 {
						v := x[e : e+8 : e+8]
						s := first + e/4
						q[s*mr+i] = pack4(v[0]*inv, v[2]*inv, v[4]*inv, v[6]*inv)
						q[(s+1)*mr+i] = pack4(v[1]*inv, v[3]*inv, v[5]*inv, v[7]*inv)
					}
					continue
				}
				for e := 0; e+4 <= len(x); e += 4 {
					v := x[e : e+4 : e+4]
					q[(first+e/4)*mr+i] = pack4(v[0]*inv, v[1]*inv, v[2]*inv, v[3]*inv)
				}
			}
		}
	}
}

// pack4 rounds four values of magnitude at most 127 to int8, half to even
// (see roundMagic), and packs them into a dword, a first.
func pack4(a, b, c, d float32) uint32 {
	r := func(v float32) uint32 { return (math.Float32bits(v+roundMagic) - roundMagicBits) & 0xff }
	return r(a) | r(b)<<8 | r(c)<<16 | r(d)<<24
}

// growU32 is grow for uint32 slices.
func growU32(s *[]uint32, n int) []uint32 {
	if cap(*s) < n {
		*s = make([]uint32, n+n/4)
	}
	return (*s)[:n]
}
