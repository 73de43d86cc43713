package cpu

import (
	"math"

	"hearth/engine/tensor"
)

// attnBlockTask is attention for many queries at once (prefill): for each
// key/value head and block of queries, the queries of every head sharing it
// form the rows of two matrix products on the GEMM microkernel, S = Q·Kᵀ
// and O = P·V, with the masked softmax of S in between. It equals the
// per-query loop up to float32 summation order (the scale is applied to q
// before the product).
type attnBlockTask struct {
	b                   *Backend
	q, k, v, out        []float32
	kq, vq              *kvq // quantized keys and values (AllocKV), or nil
	s                   *tensor.AttnSpec
	nq, hq, hkv, d, grp int
	block               int // queries per block
	blocks              int // blocks per key/value head
}

// attnBlocked reports whether n queries of a group of grp heads fill a
// microkernel tile, which is when the blocked path pays.
func (b *Backend) attnBlocked(n, grp int) bool { return n*grp >= b.k.mr }

func (b *Backend) attentionBlocked(g *tensor.Graph, n *tensor.Node, out []float32) {
	t := &b.tasks.attnBlock
	hq, hkv := n.Shape[1], g.Shape(n.In[1])[1]
	grp := hq / hkv
	block := max(1, 8*b.k.mr/grp)
	nq := n.Shape[0]
	*t = attnBlockTask{b: b, q: b.f32(n.In[0]), k: b.f32(n.In[1]), v: b.f32(n.In[2]), kq: b.kvOf(n.In[1]), vq: b.kvOf(n.In[2]), out: out, s: n.Attn,
		nq: nq, hq: hq, hkv: hkv, d: n.Shape[2], grp: grp, block: block, blocks: (nq + block - 1) / block}
	items := hkv * t.blocks
	b.pool.parallel(items, 1, t)
	*t = attnBlockTask{}
}

// keyRow is the buffer row of key position p.
func (t *attnBlockTask) keyRow(p int) int {
	if t.s.Ring > 0 {
		return p % t.s.Ring
	}
	return p
}

func (t *attnBlockTask) run(w, lo, hi int) {
	kern := t.b.k
	mr, nr := kern.mr, kern.nr
	ws := t.b.scratch.worker(w)
	s, d := t.s, t.d
	dpad := (d + nr - 1) / nr * nr
	var kvrow []float32
	if t.kq != nil || t.vq != nil {
		kvrow = grow(&ws.kvrow, d)
	}
	for item := lo; item < hi; item++ {
		kvh, qb := item/t.blocks, item%t.blocks
		i0, i1 := qb*t.block, min((qb+1)*t.block, t.nq)
		// keys any query of the block sees
		kStart, kEnd := s.KeyLen, 0
		for i := i0; i < i1; i++ {
			first, last := s.Keys(i)
			kStart, kEnd = min(kStart, first), max(kEnd, last+1)
		}
		L := kEnd - kStart
		lpad := (L + nr - 1) / nr * nr
		rows := (i1 - i0) * t.grp
		mpad := (rows + mr - 1) / mr * mr

		// Q rows, scaled, zero-padded to whole tiles
		qc := grow(&ws.aq, mpad*d)
		clear(qc[rows*d:])
		for r := 0; r < rows; r++ {
			i, h := i0+r/t.grp, kvh*t.grp+r%t.grp
			src := t.q[(i*t.hq+h)*d : (i*t.hq+h+1)*d]
			for j, x := range src {
				qc[r*d+j] = x * s.Scale
			}
		}
		// Kᵀ in panels of nr keys: [panel][d][nr]
		kt := grow(&ws.akt, lpad*d)
		for p0 := 0; p0 < lpad; p0 += nr {
			panel := kt[p0*d : (p0+nr)*d]
			for j := 0; j < nr; j++ {
				if p0+j >= L {
					for c := 0; c < d; c++ {
						panel[c*nr+j] = 0
					}
					continue
				}
				row := t.keyRow(kStart + p0 + j)
				var src []float32
				if t.kq != nil {
					src = t.kq.row(row*t.hkv+kvh, kvrow)
				} else {
					src = t.k[(row*t.hkv+kvh)*d : (row*t.hkv+kvh+1)*d]
				}
				for c, x := range src {
					panel[c*nr+j] = x
				}
			}
		}
		// S = Q·Kᵀ
		sm := grow(&ws.as, mpad*lpad)
		for p0 := 0; p0 < lpad; p0 += nr {
			for r0 := 0; r0 < mpad; r0 += mr {
				kern.gemm(d, qc[r0*d:], d, kt[p0*d:(p0+nr)*d], sm[r0*lpad+p0:], lpad, false)
			}
		}
		// masked softmax, row by row; P is zero outside each row's keys
		for r := 0; r < mpad; r++ {
			row := sm[r*lpad : (r+1)*lpad]
			if r >= rows {
				clear(row)
				continue
			}
			first, last := s.Keys(i0 + r/t.grp)
			a, z := first-kStart, last-kStart+1
			clear(row[:a])
			clear(row[z:])
			live := row[a:z]
			if s.Softcap > 0 {
				for j, x := range live {
					live[j] = s.Softcap * float32(math.Tanh(float64(x/s.Softcap)))
				}
			}
			mx := float32(math.Inf(-1))
			for _, x := range live {
				mx = max(mx, x)
			}
			inv := 1 / kern.expSum(live, mx)
			for j := range live {
				live[j] *= inv
			}
		}
		// quantized values: dequantized once, not once per panel
		var vblk []float32
		if t.vq != nil {
			vblk = grow(&ws.kvblk, L*d)
			for l := 0; l < L; l++ {
				t.vq.row(t.keyRow(kStart+l)*t.hkv+kvh, vblk[l*d:(l+1)*d])
			}
		}
		// V in panels of nr columns: [panel][lpad][nr]
		vp := grow(&ws.avp, dpad*lpad)
		for c0 := 0; c0 < dpad; c0 += nr {
			panel := vp[c0*lpad : (c0+nr)*lpad]
			for l := 0; l < lpad; l++ {
				dst := panel[l*nr : (l+1)*nr]
				if l >= L {
					clear(dst)
					continue
				}
				row := t.keyRow(kStart + l)
				var src []float32
				if t.vq != nil {
					src = vblk[l*d : (l+1)*d]
				} else {
					src = t.v[(row*t.hkv+kvh)*d : (row*t.hkv+kvh+1)*d]
				}
				n := copy(dst, src[min(c0, d):])
				clear(dst[n:])
			}
		}
		// O = P·V
		o := grow(&ws.ao, mpad*dpad)
		for c0 := 0; c0 < dpad; c0 += nr {
			for r0 := 0; r0 < mpad; r0 += mr {
				for k0 := 0; k0 < lpad; k0 += kcBlock {
					kc := min(kcBlock, lpad-k0)
					kern.gemm(kc, sm[r0*lpad+k0:], lpad, vp[c0*lpad+k0*nr:c0*lpad+(k0+kc)*nr], o[r0*dpad+c0:], dpad, k0 > 0)
				}
			}
		}
		for r := 0; r < rows; r++ {
			i, h := i0+r/t.grp, kvh*t.grp+r%t.grp
			copy(t.out[(i*t.hq+h)*d:(i*t.hq+h+1)*d], o[r*dpad:r*dpad+d])
		}
	}
}
