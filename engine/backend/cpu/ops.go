package cpu

import (
	"fmt"
	"math"

	"hearth/engine/tensor"
)

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
		if b.cur.slots[i].kind == slotFused {
			return nil // computed with its leader
		}
		return b.matmul(g, i)
	case tensor.OpAdd, tensor.OpMul:
		x, y := b.f32(n.In[0]), b.f32(n.In[1])
		if x == nil || y == nil {
			return fmt.Errorf("%v operand has no float data", n.Op)
		}
		b.elementwise(n.Op, x, y, b.vals[i], 0, 1)
	case tensor.OpScale, tensor.OpSiLU, tensor.OpGELUTanh, tensor.OpGELU, tensor.OpTanhCap:
		b.elementwise(n.Op, b.f32(n.In[0]), nil, b.vals[i], n.F[0], 1)
	case tensor.OpSoftmax:
		b.elementwise(n.Op, b.f32(n.In[0]), nil, b.vals[i], 0, n.Shape[len(n.Shape)-1])
	case tensor.OpRMSNorm, tensor.OpLayerNorm:
		return b.norm(g, i)
	case tensor.OpRoPE:
		t := b.ew(tensor.OpRoPE, b.f32(n.In[0]), nil, b.vals[i], 0, n.Shape[1]*n.Shape[2])
		t.pos, t.rope = b.ints[n.In[1].Node()], n.Rope
		t.heads, t.hd = n.Shape[1], n.Shape[2]
		b.runEW(t)
	case tensor.OpReshape:
		in := n.In[0]
		switch {
		case in.Node() >= 0 && b.ints[in.Node()] != nil:
			b.ints[i] = b.ints[in.Node()]
		case b.cur.slots[i].kind == slotView:
			b.vals[i] = b.vals[in.Node()]
		default:
			copy(b.vals[i], b.f32(in))
		}
	case tensor.OpSlice:
		x := b.f32(n.In[0])
		shape := g.Shape(n.In[0])
		axis, start, end := n.I[0], n.I[1], n.I[2]
		if axis == 0 {
			row := tensor.Elements(shape[1:])
			if b.cur.slots[i].kind == slotView {
				b.vals[i] = x[start*row : end*row]
			} else {
				copy(b.vals[i], x[start*row:end*row])
			}
			return nil
		}
		c, w := shape[len(shape)-1], end-start
		out := b.vals[i]
		for r := 0; r < len(x)/c; r++ {
			copy(out[r*w:(r+1)*w], x[r*c+start:r*c+end])
		}
	case tensor.OpStore:
		dst := b.f32(n.In[0])
		src := b.f32(n.In[1])
		if q := b.kvOf(n.In[0]); q != nil && src != nil {
			q.store(src, n.I[0]*n.Shape[1])
			return nil
		}
		if dst == nil || src == nil {
			return fmt.Errorf("store needs a float buffer and a float source")
		}
		rowLen := tensor.Elements(n.Shape[1:])
		copy(dst[n.I[0]*rowLen:], src)
	case tensor.OpAttention:
		b.attention(g, n, b.vals[i])
	case tensor.OpRoute:
		return b.route(g, i)
	case tensor.OpExpertMatMul:
		return b.expertMatMul(g, i)
	case tensor.OpExpertSum:
		return b.expertSum(g, i)
	case tensor.OpArgmax:
		return b.argmax(g, i)
	case tensor.OpSigmoid, tensor.OpSoftplus, tensor.OpCausalConv1d, tensor.OpGatedDeltaRule:
		return b.deltanet(g, i)
	case tensor.OpSplice:
		return b.splice(g, i)
	case tensor.OpAvgPool2d:
		return b.avgPool2d(g, i)
	case tensor.OpClamp:
		return b.clamp(g, i)
	case tensor.OpRelAttention:
		return b.relAttention(g, i)
	default:
		return fmt.Errorf("op %v is not implemented by the cpu backend", n.Op)
	}
	return nil
}

func (b *Backend) embed(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	hidden := n.Shape[1]
	vocab := g.Shape(n.In[0])[0]
	var ids []int32
	if in := n.In[1]; in.Node() >= 0 && b.ints[in.Node()] != nil {
		ids = b.ints[in.Node()]
	} else {
		// float ids: a device-side token (an Argmax kept for the next step)
		for _, f := range b.f32(in) {
			if f != float32(int32(f)) {
				return fmt.Errorf("token id %v is not an integer", f)
			}
			ids = append(ids, int32(f))
		}
	}
	out := b.vals[i]
	var m *mat
	var data []float32
	if bi := n.In[0].Buffer(); bi >= 0 {
		m, data = b.bufs[bi].m, b.bufs[bi].data
	} else {
		data = b.f32(n.In[0])
	}
	if m == nil && data == nil {
		return fmt.Errorf("embedding table %v has no data", n.In[0])
	}
	for t, id := range ids {
		if id < 0 || int(id) >= vocab {
			return fmt.Errorf("token id %d outside the vocabulary [0, %d)", id, vocab)
		}
		dst := out[t*hidden : (t+1)*hidden]
		if m != nil {
			m.decodeSeg(int(id), 0, dst)
		} else {
			copy(dst, data[int(id)*hidden:])
		}
	}
	return nil
}

func (b *Backend) norm(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	c := n.Shape[len(n.Shape)-1]
	vec := func(j int) ([]float32, error) {
		if len(n.In) <= j || n.In[j].IsNone() {
			return nil, nil
		}
		t := n.In[j]
		if bi := t.Buffer(); bi >= 0 && b.bufs[bi].data == nil {
			return nil, fmt.Errorf("norm parameter %v is not a vector weight", t)
		}
		d := b.f32(t)
		if len(d) != c {
			return nil, fmt.Errorf("norm parameter %v has %d elements, want %d", t, len(d), c)
		}
		return d, nil
	}
	w, err := vec(1)
	if err != nil {
		return err
	}
	bias, err := vec(2)
	if err != nil {
		return err
	}
	t := b.ew(n.Op, b.f32(n.In[0]), w, b.vals[i], n.F[0], c)
	t.bias, t.shift = bias, n.F[1]
	b.runEW(t)
	return nil
}

// ewTask is the parallel loop of the elementwise and row-wise ops.
type ewTask struct {
	op    tensor.Op
	x, y  []float32 // input, second operand (Add, Mul) or norm weight
	out   []float32
	c     float32 // Scale's factor, TanhCap's cap, a norm's eps
	row   int     // elements per item: 1 for elementwise ops, else a row
	bias  []float32
	shift float32
	pos   []int32
	rope  *tensor.Rope
	heads int
	hd    int
	b     *Backend
}

func (b *Backend) ew(op tensor.Op, x, y, out []float32, c float32, row int) *ewTask {
	t := &b.tasks.ew
	*t = ewTask{op: op, x: x, y: y, out: out, c: c, row: row, b: b}
	return t
}

// elementwiseMin is the size below which an elementwise op runs on the
// calling thread: waking the pool costs more than the loop.
const elementwiseMin = 1 << 14

func (b *Backend) elementwise(op tensor.Op, x, y, out []float32, c float32, row int) {
	b.runEW(b.ew(op, x, y, out, c, row))
}

func (b *Backend) runEW(t *ewTask) {
	items := len(t.out) / t.row
	grain := items
	if len(t.out) >= elementwiseMin {
		grain = b.pool.grainFor(items, 2, 1)
	}
	b.pool.parallel(items, grain, t)
	*t = ewTask{}
}

func (t *ewTask) run(w, lo, hi int) {
	switch t.op {
	case tensor.OpAdd, tensor.OpMul:
		m := len(t.y)
		j := lo % m
		x, out := t.x[lo:hi], t.out[lo:hi]
		for e := range out {
			if t.op == tensor.OpAdd {
				out[e] = x[e] + t.y[j]
			} else {
				out[e] = x[e] * t.y[j]
			}
			if j++; j == m {
				j = 0
			}
		}
	case tensor.OpScale:
		for e, v := range t.x[lo:hi] {
			t.out[lo+e] = v * t.c
		}
	case tensor.OpSiLU:
		if f := t.b.k.silu; f != nil {
			f(t.x[lo:hi], t.out[lo:hi])
			return
		}
		for e, v := range t.x[lo:hi] {
			t.out[lo+e] = v / (1 + exp32(-v))
		}
	case tensor.OpGELUTanh:
		const k = 0.7978845608028654 // √(2/π)
		for e, v := range t.x[lo:hi] {
			t.out[lo+e] = 0.5 * v * (1 + float32(math.Tanh(k*(float64(v)+0.044715*float64(v)*float64(v)*float64(v)))))
		}
	case tensor.OpGELU:
		for e, v := range t.x[lo:hi] {
			t.out[lo+e] = 0.5 * v * (1 + float32(math.Erf(float64(v)/math.Sqrt2)))
		}
	case tensor.OpTanhCap:
		for e, v := range t.x[lo:hi] {
			t.out[lo+e] = t.c * float32(math.Tanh(float64(v/t.c)))
		}
	case tensor.OpSoftmax:
		for r := lo; r < hi; r++ {
			o := t.out[r*t.row : (r+1)*t.row]
			copy(o, t.x[r*t.row:])
			softmax(o)
		}
	case tensor.OpRMSNorm, tensor.OpLayerNorm:
		for r := lo; r < hi; r++ {
			t.normRow(t.x[r*t.row:(r+1)*t.row], t.out[r*t.row:(r+1)*t.row])
		}
	case tensor.OpRoPE:
		t.ropeRows(w, lo, hi)
	}
}

// normRow follows the reference: sums in float64, the scale applied in
// float32.
func (t *ewTask) normRow(row, o []float32) {
	c := len(row)
	var mean float64
	if t.op == tensor.OpLayerNorm {
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(c)
	}
	var ss float64
	for _, v := range row {
		d := float64(v) - mean
		ss += d * d
	}
	inv := float32(1 / math.Sqrt(ss/float64(c)+float64(t.c)))
	fm := float32(mean)
	w, bias := t.y, t.bias
	for j, v := range row {
		y := (v - fm) * inv
		if w != nil {
			y *= w[j] + t.shift
		}
		if bias != nil {
			y += bias[j]
		}
		o[j] = y
	}
}

// softmax normalizes x in place: max-subtracted, exponentials in float32,
// their sum in float64.
func softmax(x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for j, v := range x {
		e := exp32(v - mx)
		x[j] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for j := range x {
		x[j] *= inv
	}
}

// ropeRows follows Hugging Face's apply_rotary_pos_emb for tokens [lo, hi):
// angles p·inv_freq in float32, cos and sin times the attention factor,
// rotate_half pairing (or adjacent pairs when traditional).
func (t *ewTask) ropeRows(w, lo, hi int) {
	r := t.rope
	half := r.Dims / 2
	cs := grow(&t.b.scratch.workers[w].rope, r.Dims)
	cos, sin := cs[:half], cs[half:]
	for tok := lo; tok < hi; tok++ {
		p := t.pos[tok]
		for j := 0; j < half; j++ {
			a := float32(p) * r.InvFreq[j]
			cos[j] = float32(math.Cos(float64(a))) * r.Scale
			sin[j] = float32(math.Sin(float64(a))) * r.Scale
		}
		base := tok * t.heads * t.hd
		copy(t.out[base:base+t.heads*t.hd], t.x[base:])
		for h := 0; h < t.heads; h++ {
			v := t.out[base+h*t.hd : base+(h+1)*t.hd]
			for j := 0; j < half; j++ {
				i1, i2 := j, j+half
				if r.Traditional {
					i1, i2 = 2*j, 2*j+1
				}
				x1, x2 := v[i1], v[i2]
				v[i1] = x1*cos[j] - x2*sin[j]
				v[i2] = x2*cos[j] + x1*sin[j]
			}
		}
	}
}
