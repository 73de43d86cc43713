package cpu

import (
	"math"

	"hearth/engine/tensor"
)

// attnTask is the parallel loop of the attention op over (query, head)
// pairs: scores q·k·scale (softcapped), a max-subtracted softmax with
// float32 exponentials and a float64 sum, then the weighted sum of values.
type attnTask struct {
	b            *Backend
	q, k, v, out []float32
	kq, vq       *kvq // quantized keys and values (AllocKV): attnQuantTask
	s            *tensor.AttnSpec
	hq, hkv, d   int
}

func (b *Backend) attention(g *tensor.Graph, n *tensor.Node, out []float32) {
	if b.attnBlocked(n.Shape[0], n.Shape[1]/g.Shape(n.In[1])[1]) {
		b.attentionBlocked(g, n, out)
		return
	}
	t := &b.tasks.attn
	*t = attnTask{b: b, q: b.f32(n.In[0]), k: b.f32(n.In[1]), v: b.f32(n.In[2]), kq: b.kvOf(n.In[1]), vq: b.kvOf(n.In[2]), out: out, s: n.Attn,
		hq: n.Shape[1], hkv: g.Shape(n.In[1])[1], d: n.Shape[2]}
	if t.kq != nil || t.vq != nil {
		// quantized rows are dequantized once for the query heads that
		// share them: the loop is over (query, key/value head)
		items := n.Shape[0] * t.hkv
		b.pool.parallel(items, 1, (*attnQuantTask)(t))
		*t = attnTask{}
		return
	}
	items := n.Shape[0] * t.hq
	b.pool.parallel(items, b.pool.grainFor(items, 4, 1), t)
	*t = attnTask{}
}

// attnQuantTask is attnTask over a quantized cache: each item is a query
// and a key/value head, whose rows are dequantized once for every query
// head of its group.
type attnQuantTask attnTask

// headRow is position p's row of key/value head kvh in a cache buffer:
// data's own (float32), or q's dequantized into scratch (quantized).
func (t *attnQuantTask) headRow(data []float32, q *kvq, p, kvh int, scratch []float32) []float32 {
	row := p
	if t.s.Ring > 0 {
		row = p % t.s.Ring
	}
	if q != nil {
		return q.row(row*t.hkv+kvh, scratch)
	}
	off := (row*t.hkv + kvh) * t.d
	return data[off : off+t.d]
}

func (t *attnQuantTask) run(w, lo, hi int) {
	s, d, hq, hkv := t.s, t.d, t.hq, t.hkv
	kern := t.b.k
	group := hq / hkv
	ws := &t.b.scratch.workers[w]
	scores := grow(&ws.scores, group*s.KeyLen)
	kvrow := grow(&ws.kvrow, d)
	stats := grow(&ws.kvstats, 2*group) // per head: running max, then 1/sum
	for item := lo; item < hi; item++ {
		i, kvh := item/hkv, item%hkv
		first, last := s.Keys(i)
		span := last - first + 1
		for gh := 0; gh < group; gh++ {
			stats[gh] = float32(math.Inf(-1))
		}
		for p := first; p <= last; p++ {
			kr := t.headRow(t.k, t.kq, p, kvh, kvrow)
			for gh := 0; gh < group; gh++ {
				h := kvh*group + gh
				sc := kern.dot(t.q[(i*hq+h)*d:(i*hq+h+1)*d], kr) * s.Scale
				if s.Softcap > 0 {
					sc = s.Softcap * float32(math.Tanh(float64(sc/s.Softcap)))
				}
				scores[gh*span+p-first] = sc
				stats[gh] = max(stats[gh], sc)
			}
		}
		for gh := 0; gh < group; gh++ {
			h := kvh*group + gh
			stats[group+gh] = float32(1 / kern.expSum(scores[gh*span:(gh+1)*span], stats[gh]))
			clear(t.out[(i*hq+h)*d : (i*hq+h+1)*d])
		}
		for p := first; p <= last; p++ {
			vr := t.headRow(t.v, t.vq, p, kvh, kvrow)
			for gh := 0; gh < group; gh++ {
				h := kvh*group + gh
				kern.axpy(scores[gh*span+p-first]*stats[group+gh], vr, t.out[(i*hq+h)*d:(i*hq+h+1)*d])
			}
		}
	}
}

func (t *attnTask) run(w, lo, hi int) {
	s, d, hq, hkv := t.s, t.d, t.hq, t.hkv
	kern := t.b.k
	group := hq / hkv
	scores := grow(&t.b.scratch.workers[w].scores, s.KeyLen)
	for qh := lo; qh < hi; qh++ {
		i, h := qh/hq, qh%hq
		first, last := s.Keys(i)
		qv := t.q[(i*hq+h)*d : (i*hq+h+1)*d]
		kvh := h / group
		mx := float32(math.Inf(-1))
		for p := first; p <= last; p++ {
			row := p
			if s.Ring > 0 {
				row = p % s.Ring
			}
			off := (row*hkv + kvh) * d
			sc := kern.dot(qv, t.k[off:off+d]) * s.Scale
			if s.Softcap > 0 {
				sc = s.Softcap * float32(math.Tanh(float64(sc/s.Softcap)))
			}
			scores[p-first] = sc
			mx = max(mx, sc)
		}
		sum := kern.expSum(scores[:last-first+1], mx)
		o := t.out[(i*hq+h)*d : (i*hq+h+1)*d]
		clear(o)
		inv := float32(1 / sum)
		for p := first; p <= last; p++ {
			row := p
			if s.Ring > 0 {
				row = p % s.Ring
			}
			off := (row*hkv + kvh) * d
			kern.axpy(scores[p-first]*inv, t.v[off:off+d], o)
		}
	}
}
