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
	s            *tensor.AttnSpec
	hq, hkv, d   int
}

func (b *Backend) attention(g *tensor.Graph, n *tensor.Node, out []float32) {
	if b.attnBlocked(n.Shape[0], n.Shape[1]/g.Shape(n.In[1])[1]) {
		b.attentionBlocked(g, n, out)
		return
	}
	t := &b.tasks.attn
	*t = attnTask{b: b, q: b.f32(n.In[0]), k: b.f32(n.In[1]), v: b.f32(n.In[2]), out: out, s: n.Attn,
		hq: n.Shape[1], hkv: g.Shape(n.In[1])[1], d: n.Shape[2]}
	items := n.Shape[0] * t.hq
	b.pool.parallel(items, b.pool.grainFor(items, 4, 1), t)
	*t = attnTask{}
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
