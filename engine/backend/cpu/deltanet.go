package cpu

import (
	"fmt"
	"math"

	"hearth/engine/tensor"
)

// Linear-attention ops (tensor/deltanet.go): Sigmoid, Softplus, the causal
// depthwise convolution and the gated delta-rule scan. The scan runs each
// value head on its own worker, token after token, exactly as transformers'
// recurrent form does; the convolution splits the channels.

func (b *Backend) deltanet(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	switch n.Op {
	case tensor.OpSigmoid, tensor.OpSoftplus:
		x := b.f32(n.In[0])
		if x == nil {
			return fmt.Errorf("%v operand has no float data", n.Op)
		}
		t := &unaryTask{op: n.Op, x: x, out: b.vals[i]}
		grain := len(x)
		if len(x) >= elementwiseMin {
			grain = b.pool.grainFor(len(x), 2, 1)
		}
		b.pool.parallel(len(x), grain, t)
	case tensor.OpCausalConv1d:
		return b.causalConv1d(g, i)
	case tensor.OpGatedDeltaRule:
		return b.gatedDeltaRule(g, i)
	}
	return nil
}

type unaryTask struct {
	op     tensor.Op
	x, out []float32
}

func (t *unaryTask) run(_, lo, hi int) {
	for e, v := range t.x[lo:hi] {
		if t.op == tensor.OpSigmoid {
			t.out[lo+e] = sigmoid32(v)
		} else {
			t.out[lo+e] = softplus32(v)
		}
	}
}

// sigmoid32 is 1/(1+e^-x) with the exponential rounded to float32.
func sigmoid32(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// softplus32 is torch's softplus (beta 1, threshold 20).
func softplus32(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}

// rows32 decodes rows [0, rows) of a [rows, cols] float operand: a node,
// an Alloc'd buffer, or a dense or quantized weight.
func (b *Backend) rows32(t tensor.T, rows, cols int) ([]float32, error) {
	if d := b.f32(t); d != nil {
		if len(d) != rows*cols {
			return nil, fmt.Errorf("operand %v has %d values, want %d", t, len(d), rows*cols)
		}
		return d, nil
	}
	bi := t.Buffer()
	if bi < 0 || b.bufs[bi].m == nil {
		return nil, fmt.Errorf("operand %v has no float data", t)
	}
	out := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		b.bufs[bi].m.decodeSeg(r, 0, out[r*cols:(r+1)*cols])
	}
	return out, nil
}

func (b *Backend) causalConv1d(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	ws := g.Shape(n.In[1])
	c, k := ws[0], ws[1]
	w, err := b.rows32(n.In[1], c, k)
	if err != nil {
		return fmt.Errorf("conv weight: %w", err)
	}
	x, state, next := b.f32(n.In[0]), b.f32(n.In[2]), b.f32(n.In[3])
	if x == nil || state == nil || next == nil {
		return fmt.Errorf("causal conv1d needs float input and state buffers")
	}
	t := &convTask{x: x, w: w, state: state, next: next, y: b.vals[i], n: n.Shape[0], c: c, k: k}
	const block = 64
	b.pool.parallel((c+block-1)/block, 1, t)
	return nil
}

// convTask convolves channel blocks of 64.
type convTask struct {
	x, w, state, next, y []float32
	n, c, k              int
}

func (t *convTask) run(_, lo, hi int) {
	const block = 64
	c, k, n := t.c, t.k, t.n
	// xs(r, ch) is row r of [state; x]
	xs := func(r, ch int) float32 {
		if r < k-1 {
			return t.state[r*c+ch]
		}
		return t.x[(r-k+1)*c+ch]
	}
	for blk := lo; blk < hi; blk++ {
		c0, c1 := blk*block, min((blk+1)*block, c)
		for tok := 0; tok < n; tok++ {
			for ch := c0; ch < c1; ch++ {
				var acc float32
				for j := 0; j < k; j++ {
					acc += t.w[ch*k+j] * xs(tok+j, ch)
				}
				t.y[tok*c+ch] = acc
			}
		}
		for r := 0; r < k-1; r++ {
			for ch := c0; ch < c1; ch++ {
				t.next[r*c+ch] = xs(n+r, ch)
			}
		}
	}
}

func (b *Backend) gatedDeltaRule(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	qs, vs := g.Shape(n.In[0]), g.Shape(n.In[2])
	t := &deltaTask{
		q: b.f32(n.In[0]), k: b.f32(n.In[1]), v: b.f32(n.In[2]), decay: b.f32(n.In[3]), beta: b.f32(n.In[4]),
		state: b.f32(n.In[5]), next: b.f32(n.In[6]), y: b.vals[i],
		n: qs[0], hk: qs[1], dk: qs[2], hv: vs[1], dv: vs[2],
	}
	for _, s := range [][]float32{t.q, t.k, t.v, t.decay, t.beta, t.state, t.next} {
		if s == nil {
			return fmt.Errorf("gated delta rule operand has no float data")
		}
	}
	b.pool.parallel(t.hv, 1, t)
	return nil
}

// deltaTask scans value heads [lo, hi), each over every token in order.
type deltaTask struct {
	q, k, v, decay, beta, state, next, y []float32
	n, hk, dk, hv, dv                    int
}

func (t *deltaTask) run(_, lo, hi int) {
	dk, dv := t.dk, t.dv
	scale := float32(1 / math.Sqrt(float64(dk)))
	qn, kn := make([]float32, dk), make([]float32, dk)
	mem := make([]float32, dv)
	for h := lo; h < hi; h++ {
		s := t.next[h*dk*dv : (h+1)*dk*dv]
		copy(s, t.state[h*dk*dv:(h+1)*dk*dv])
		kh := h / (t.hv / t.hk)
		for tok := 0; tok < t.n; tok++ {
			l2norm(t.q[(tok*t.hk+kh)*dk:(tok*t.hk+kh+1)*dk], qn)
			l2norm(t.k[(tok*t.hk+kh)*dk:(tok*t.hk+kh+1)*dk], kn)
			for i := range qn {
				qn[i] *= scale
			}
			d := float32(math.Exp(float64(t.decay[tok*t.hv+h])))
			beta := t.beta[tok*t.hv+h]
			v := t.v[(tok*t.hv+h)*dv : (tok*t.hv+h+1)*dv]
			y := t.y[(tok*t.hv+h)*dv : (tok*t.hv+h+1)*dv]
			clear(mem)
			for i, ki := range kn {
				row := s[i*dv : (i+1)*dv]
				for j := range row {
					row[j] *= d
					mem[j] += row[j] * ki
				}
			}
			for j := range mem {
				mem[j] = (v[j] - mem[j]) * beta // delta
			}
			clear(y)
			for i, ki := range kn {
				row := s[i*dv : (i+1)*dv]
				qi := qn[i]
				for j, dj := range mem {
					row[j] += ki * dj
					y[j] += row[j] * qi
				}
			}
		}
	}
}

// l2norm writes x·rsqrt(Σx² + eps) to dst (the sum in float64).
func l2norm(x, dst []float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v * v)
	}
	inv := float32(1 / math.Sqrt(ss+tensor.DeltaRuleEps))
	for i, v := range x {
		dst[i] = v * inv
	}
}
