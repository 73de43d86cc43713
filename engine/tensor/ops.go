package tensor

import (
	"math"
	"slices"
)

// Op is one kind of graph node. The list is closed: a backend implements
// every op (Ops returns them all), and tensortest checks each one against
// the cpu reference, so a missing op fails a test instead of a user's run.
type Op uint8

const (
	OpInvalid        Op = iota
	OpInput             // host data given at build time
	OpEmbed             // rows of a table (dense or quantized) by token id
	OpMatMul            // x·wᵀ
	OpAdd               // a + b, b broadcast over a's leading axes
	OpMul               // a * b, likewise
	OpScale             // x * F[0]
	OpRMSNorm           // x / rms(x) * (w + F[1])
	OpLayerNorm         // (x - mean) / std * w + b
	OpRoPE              // rotary position embedding
	OpSiLU              // x * sigmoid(x)
	OpGELUTanh          // tanh approximation of GELU
	OpGELU              // exact (erf) GELU
	OpSoftmax           // over the last axis
	OpTanhCap           // F[0] * tanh(x / F[0]) (logit softcapping)
	OpReshape           // same data, new shape
	OpSlice             // I[0]=axis, I[1]=start, I[2]=end
	OpStore             // copy In[1] into buffer In[0] starting at row I[0]
	OpAttention         // scaled dot-product attention over a KV buffer
	OpRoute             // mixture-of-experts router: top-k experts and weights per row
	OpExpertMatMul      // x·w[e]ᵀ for each row's routed experts e of a stacked weight
	OpExpertSum         // routing-weighted sum of each row's expert outputs
	OpArgmax            // index of each row's largest value (greedy sampling on the device)
	OpSigmoid           // 1 / (1 + exp(-x))
	OpSoftplus          // log(1 + exp(x)), x itself above 20 (deltanet.go)
	OpCausalConv1d      // depthwise causal convolution over time with a rolling state (deltanet.go)
	OpGatedDeltaRule    // the gated delta-rule scan over a recurrent state (deltanet.go)
	OpSplice            // rows of x replaced by rows of src (media.go)
	OpAvgPool2d         // mean of k×k blocks of a grid of rows (media.go)
	OpClamp             // min(max(x, F[0]), F[1]) (media.go)
	OpRelAttention      // local self-attention with a relative position term (media.go)
	numOps
)

var opNames = [...]string{
	OpInvalid: "Invalid", OpInput: "Input", OpEmbed: "Embed", OpMatMul: "MatMul",
	OpAdd: "Add", OpMul: "Mul", OpScale: "Scale", OpRMSNorm: "RMSNorm",
	OpLayerNorm: "LayerNorm", OpRoPE: "RoPE", OpSiLU: "SiLU", OpGELUTanh: "GELUTanh",
	OpGELU: "GELU", OpSoftmax: "Softmax", OpTanhCap: "TanhCap", OpReshape: "Reshape",
	OpSlice: "Slice", OpStore: "Store", OpAttention: "Attention",
	OpRoute: "Route", OpExpertMatMul: "ExpertMatMul", OpExpertSum: "ExpertSum",
	OpArgmax:  "Argmax",
	OpSigmoid: "Sigmoid", OpSoftplus: "Softplus", OpCausalConv1d: "CausalConv1d", OpGatedDeltaRule: "GatedDeltaRule",
	OpSplice: "Splice", OpAvgPool2d: "AvgPool2d", OpClamp: "Clamp", OpRelAttention: "RelAttention",
}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "Op?"
}

// Ops lists every op a backend must implement.
func Ops() []Op {
	ops := make([]Op, 0, numOps-1)
	for o := OpInput; o < numOps; o++ {
		ops = append(ops, o)
	}
	return ops
}

// Input records host float32 data of the given shape.
func (g *Graph) Input(data []float32, shape ...int) T {
	if Elements(shape) != len(data) {
		return g.fail("input: %d values for shape %v", len(data), shape)
	}
	return g.add(Node{Op: OpInput, Floats: data, Shape: clone(shape)})
}

// InputInts records host int32 data (token ids, positions).
func (g *Graph) InputInts(data []int32, shape ...int) T {
	if Elements(shape) != len(data) {
		return g.fail("input: %d ints for shape %v", len(data), shape)
	}
	return g.add(Node{Op: OpInput, Ints: data, Shape: clone(shape)})
}

// Embed gathers rows of table [vocab, hidden] for ids [n]: → [n, hidden].
// The table may be dense or quantized. ids are host integers (InputInts),
// or float32 values holding integers on the backend (a node or buffer,
// e.g. an Argmax stored for the next step). Host ids out of range are a
// run error; a float id out of range is one on the cpu backend and gives
// an unspecified row on a device that cannot report it.
func (g *Graph) Embed(table, ids T) T {
	ts, is := g.Shape(table), g.Shape(ids)
	if len(ts) != 2 || len(is) != 1 {
		return g.fail("embed: table %v, ids %v", ts, is)
	}
	return g.add(Node{Op: OpEmbed, In: []T{table, ids}, Shape: []int{is[0], ts[1]}})
}

// MatMul is x [..., k] times wᵀ where w is [n, k] (PyTorch Linear layout),
// giving [..., n]. w may be a dense or quantized weight, or a node.
func (g *Graph) MatMul(x, w T) T {
	xs, ws := g.Shape(x), g.Shape(w)
	if len(ws) != 2 || last(xs) != ws[1] {
		return g.fail("matmul: x %v, w %v", xs, ws)
	}
	out := clone(xs)
	out[len(out)-1] = ws[0]
	return g.add(Node{Op: OpMatMul, In: []T{x, w}, Shape: out})
}

func (g *Graph) binary(op Op, a, b T) T {
	as, bs := g.Shape(a), g.Shape(b)
	if !isSuffix(as, bs) {
		return g.fail("%v: shapes %v and %v do not broadcast", op, as, bs)
	}
	return g.add(Node{Op: op, In: []T{a, b}, Shape: clone(as)})
}

// Add is a + b; b's shape must equal a's or a suffix of it.
func (g *Graph) Add(a, b T) T { return g.binary(OpAdd, a, b) }

// Mul is a * b elementwise, broadcasting like Add.
func (g *Graph) Mul(a, b T) T { return g.binary(OpMul, a, b) }

// Scale is x * s.
func (g *Graph) Scale(x T, s float32) T {
	return g.add(Node{Op: OpScale, In: []T{x}, Shape: clone(g.Shape(x)), F: [2]float32{s}})
}

func (g *Graph) unary(op Op, x T) T {
	return g.add(Node{Op: op, In: []T{x}, Shape: clone(g.Shape(x))})
}

// SiLU is x * sigmoid(x).
func (g *Graph) SiLU(x T) T { return g.unary(OpSiLU, x) }

// GELUTanh is 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).
func (g *Graph) GELUTanh(x T) T { return g.unary(OpGELUTanh, x) }

// GELU is 0.5x(1 + erf(x/√2)).
func (g *Graph) GELU(x T) T { return g.unary(OpGELU, x) }

// Softmax normalizes over the last axis (max-subtracted, in float32).
func (g *Graph) Softmax(x T) T { return g.unary(OpSoftmax, x) }

// TanhCap is c·tanh(x/c), Gemma 2's logit softcapping.
func (g *Graph) TanhCap(x T, c float32) T {
	return g.add(Node{Op: OpTanhCap, In: []T{x}, Shape: clone(g.Shape(x)), F: [2]float32{c}})
}

// RMSNorm is x / sqrt(mean(x²) + eps) * (w + shift) over the last axis,
// computed in float32. w may be none (no scale); shift is 0 for most
// models and 1 for Gemma's (1 + w) convention.
func (g *Graph) RMSNorm(x, w T, eps, shift float32) T {
	xs := g.Shape(x)
	in := []T{x}
	if !w.IsNone() {
		if ws := g.Shape(w); len(ws) != 1 || ws[0] != last(xs) {
			return g.fail("rmsnorm: x %v, w %v", xs, ws)
		}
		in = append(in, w)
	}
	return g.add(Node{Op: OpRMSNorm, In: in, Shape: clone(xs), F: [2]float32{eps, shift}})
}

// LayerNorm is (x - mean) / sqrt(var + eps) * w + b over the last axis; w
// and b may each be none.
func (g *Graph) LayerNorm(x, w, b T, eps float32) T {
	return g.add(Node{Op: OpLayerNorm, In: []T{x, w, b}, Shape: clone(g.Shape(x)), F: [2]float32{eps}})
}

// Rope is a rotary embedding table: for rotary pair i (of Dims/2) at
// position p the angle is p·InvFreq[i]; cos and sin are multiplied by
// Scale (YaRN's and LongRoPE's attention factor; 1 otherwise). Only the
// first Dims of each head rotate. Traditional pairs adjacent elements
// (2i, 2i+1) as in the original paper and MLX's traditional=True; the
// default pairs (i, i + Dims/2) as Hugging Face's rotate_half does.
type Rope struct {
	InvFreq     []float32
	Dims        int
	Traditional bool
	Scale       float32
}

// RoPE rotates x [n, heads, headDim] at positions pos (int32 [n]).
func (g *Graph) RoPE(x, pos T, r *Rope) T {
	xs, ps := g.Shape(x), g.Shape(pos)
	if len(xs) != 3 || len(ps) != 1 || ps[0] != xs[0] || r.Dims > xs[2] || r.Dims%2 != 0 || len(r.InvFreq) != r.Dims/2 {
		return g.fail("rope: x %v, pos %v, dims %d, %d frequencies", xs, ps, r.Dims, len(r.InvFreq))
	}
	return g.add(Node{Op: OpRoPE, In: []T{x, pos}, Shape: clone(xs), Rope: r})
}

// Reshape gives x a new shape with the same number of elements.
func (g *Graph) Reshape(x T, shape ...int) T {
	xs := g.Shape(x)
	if Elements(xs) != Elements(shape) {
		return g.fail("reshape: %v to %v", xs, shape)
	}
	return g.add(Node{Op: OpReshape, In: []T{x}, Shape: clone(shape)})
}

// Slice keeps [start, end) of axis (0 or the last axis).
func (g *Graph) Slice(x T, axis, start, end int) T {
	xs := clone(g.Shape(x))
	if axis < 0 {
		axis += len(xs)
	}
	if axis < 0 || axis >= len(xs) || (axis != 0 && axis != len(xs)-1) || start < 0 || end > xs[axis] || start >= end {
		return g.fail("slice: axis %d [%d:%d] of %v", axis, start, end, g.Shape(x))
	}
	xs[axis] = end - start
	return g.add(Node{Op: OpSlice, In: []T{x}, Shape: xs, I: [3]int{axis, start, end}})
}

// Store copies src [n, ...] into rows [row, row+n) of the persistent buffer
// dst [rows, ...]. It returns dst's T, now ordered after the write: ops that
// read dst should take the returned T so backends keep the order.
func (g *Graph) Store(dst, src T, row int) T {
	ds, ss := g.Shape(dst), g.Shape(src)
	if dst.Buffer() < 0 || len(ds) != len(ss) || !slices.Equal(ds[1:], ss[1:]) || row < 0 || row+ss[0] > ds[0] {
		return g.fail("store: src %v into %v at row %d", ss, ds, row)
	}
	g.add(Node{Op: OpStore, In: []T{dst, src}, Shape: clone(ss), I: [3]int{row}})
	return dst
}

// AttnSpec says which keys each query sees. Query i is at position
// QueryPos+i; keys are at positions [0, KeyLen) (causal: key p is seen by
// query q when p ≤ q, and q - p < Window when Window > 0). Key position p
// lives in buffer row p, or p % Ring when Ring > 0 (a rotating cache). The
// scores are q·k·Scale, then Softcap·tanh(s/Softcap) when Softcap > 0,
// then softmax in float32. Bidirectional drops the causal rule (encoders).
//
// Spans are runs of positions that see each other both ways (an image's
// soft tokens in Gemma 3): a query inside a span also sees the span's later
// keys. The window still bounds what it sees from below, as transformers'
// sliding layers combine them: AND(window, OR(causal, same span)). Every
// query therefore sees one run of keys, Keys(i).
type AttnSpec struct {
	Scale         float32
	QueryPos      int
	KeyLen        int
	Window        int
	Ring          int
	Softcap       float32
	Bidirectional bool
	Spans         []Span
}

// Span is the positions [Start, End).
type Span struct{ Start, End int }

// Keys is the run of key positions [first, last] query i sees.
func (s *AttnSpec) Keys(i int) (first, last int) {
	if s.Bidirectional {
		return 0, s.KeyLen - 1
	}
	qp := s.QueryPos + i
	last = qp
	if s.Window > 0 {
		first = max(0, qp-s.Window+1)
	}
	for _, sp := range s.Spans {
		if sp.Start <= qp && qp < sp.End {
			last = max(last, sp.End-1)
		}
	}
	return first, last
}

// Attention is softmax(q·kᵀ·scale + mask)·v for q [n, hq, d] against key
// and value buffers k, v [rows, hkv, d] (hq a multiple of hkv: grouped
// query attention), giving [n, hq, d].
func (g *Graph) Attention(q, k, v T, s AttnSpec) T {
	qs, ks, vs := g.Shape(q), g.Shape(k), g.Shape(v)
	if len(qs) != 3 || len(ks) != 3 || !slices.Equal(ks, vs) || ks[2] != qs[2] || ks[1] == 0 || qs[1]%ks[1] != 0 {
		return g.fail("attention: q %v, k %v, v %v", qs, ks, vs)
	}
	rows := s.KeyLen
	if s.Ring > 0 {
		rows = min(s.KeyLen, s.Ring)
	}
	if rows > ks[0] || s.QueryPos+qs[0] > s.KeyLen {
		return g.fail("attention: %d keys (ring %d) in a buffer of %d rows, queries at %d..%d", s.KeyLen, s.Ring, ks[0], s.QueryPos, s.QueryPos+qs[0])
	}
	for i, sp := range s.Spans {
		// sorted, apart, and written by now (a span only widens what a
		// query sees upwards, so the ring holds what it adds)
		if sp.Start < 0 || sp.End <= sp.Start || sp.End > s.KeyLen || i > 0 && sp.Start < s.Spans[i-1].End {
			return g.fail("attention: span %v of %v (keys [0, %d))", sp, s.Spans, s.KeyLen)
		}
	}
	s.Spans = slices.Clone(s.Spans)
	if s.Scale == 0 {
		s.Scale = float32(1 / math.Sqrt(float64(qs[2])))
	}
	return g.add(Node{Op: OpAttention, In: []T{q, k, v}, Shape: clone(qs), Attn: &s})
}

// MaxArgmaxWidth is the widest row Argmax takes: every index below it is
// exact in float32.
const MaxArgmaxWidth = 1 << 24

// Argmax gives, for each row of x [n, v], the index of its largest value
// as an exact float32 integer: [n, 1]. It is greedy sampling done where
// the logits are, so only the token id goes back to the host. The rule is
// sample.Argmax's, exactly: the first index among equal maxima, NaN never
// wins (it compares false), except that a row starting with NaN gives 0.
func (g *Graph) Argmax(x T) T {
	xs := g.Shape(x)
	if len(xs) != 2 || xs[1] < 1 || xs[1] > MaxArgmaxWidth {
		return g.fail("argmax: x %v (want [n, v] with 1 ≤ v ≤ %d)", xs, MaxArgmaxWidth)
	}
	return g.add(Node{Op: OpArgmax, In: []T{x}, Shape: []int{xs[0], 1}})
}
