package qwen35

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"hearth/engine/cache"
	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/nn"
	"hearth/engine/tensor"
)

// Model is a Qwen 3.5 text decoder.
type Model struct {
	cfg    *config.Config
	s      *settings
	embed  tensor.T
	layers []layer
	norm   nn.RMSNorm
	head   tensor.T
	rope   *nn.Rope
	mrope  [3]int // mrope_section: rotary frequency pairs per position stream
	ignore []string
}

type layer struct {
	inNorm, postNorm nn.RMSNorm
	linear           *deltaNet  // linear_attention layers
	attn             *attention // full_attention layers
	gate, up, down   nn.Linear  // dense feed-forward
	moe              *moeBlock  // sparse feed-forward (qwen3_5_moe)
}

// attention is Qwen3_5Attention: q_proj gives each head's query and a
// sigmoid output gate; per-head q/k norms; partial rotary.
type attention struct {
	q, k, v, o   nn.Linear
	qNorm, kNorm nn.RMSNorm
}

// deltaNet is Qwen3_5GatedDeltaNet.
type deltaNet struct {
	qkv, z, b, a, out nn.Linear
	conv              tensor.T // [conv_dim, kernel]
	dtBias            tensor.T // [value heads]
	negA              tensor.T // -exp(A_log) [value heads], float32
	norm              tensor.T // Qwen3_5RMSNormGated's weight [value_head_dim]
}

// keep is how many past passes a DeltaNet state can undo with Trim: a
// pipelined greedy decode drops up to two queued steps when it stops.
const keep = 2

// prefixes are where the text model's tensors live: transformers' own
// multimodal save, mlx-lm's and mlx-vlm's, and a text-only (ForCausalLM)
// save. The one holding embed_tokens wins.
var prefixes = []struct{ model, head string }{
	{"model.language_model.", "lm_head"},
	{"language_model.model.", "language_model.lm_head"},
	{"model.", "lm_head"},
}

// ignore lists checkpoint tensors the port knowingly skips: the vision
// tower of a checkpoint that does not run it (a text-only type's leftover)
// and the multi-token-prediction head. A multimodal checkpoint's tower is
// the engine's (engine/tower/qwenvl), which must read every tensor of it.
var (
	ignore       = []string{"model.visual.*", "visual.*", "vision_tower.*", "model.vision_tower.*", "mtp.*", "model.mtp.*"}
	ignoreVision = []string{"mtp.*", "model.mtp.*"}
)

// media says which towers' output Forward splices in for c: pictures for
// the multimodal checkpoints, dense (model_type qwen3_5) and MoE
// (qwen3_5_moe), whose towers and rope indexing are the same classes.
func media(c *config.Config) family.Caps {
	if c.ModelType == "qwen3_5" || c.ModelType == "qwen3_5_moe" {
		return family.Vision
	}
	return 0
}

// New binds the checkpoint's tensors by their Hugging Face names.
func New(c *config.Config, l *nn.Loader) (family.Model, error) {
	s, err := readSettings(c)
	if err != nil {
		return nil, fmt.Errorf("qwen3_5: %w", err)
	}
	rc := c.Rope
	rc.PartialRotaryFactor = s.partialRotary
	rope, err := nn.NewRope(rc, c.HeadDim, c.MaxPositionEmbeddings)
	if err != nil {
		return nil, fmt.Errorf("qwen3_5: %w", err)
	}
	m := &Model{cfg: c, s: s, rope: rope, mrope: s.mropeSection, ignore: ignore}
	if media(c) != 0 {
		m.ignore = ignoreVision
	}
	p, head := prefixes[len(prefixes)-1].model, prefixes[len(prefixes)-1].head
	for _, pre := range prefixes {
		if l.W.Has(pre.model + "embed_tokens.weight") {
			p, head = pre.model, pre.head
			break
		}
	}
	hidden, vocab := c.HiddenSize, c.VocabSize
	eps := float32(c.RMSNormEps)
	// Qwen3_5RMSNorm scales by (1 + w). mlx-lm's sanitize adds the 1 into
	// the stored weights when it converts (it also turns conv1d.weight
	// from [C, 1, K] into [C, K, 1]): such a checkpoint's norms take w as is.
	shift := float32(1)
	if mlxNorms(l, p, s) {
		shift = 0
	}
	norm := func(name string, dim int) nn.RMSNorm {
		return nn.RMSNorm{W: l.Tensor(name+".weight", dim), Eps: eps, Shift: shift}
	}
	m.embed = l.Linear(p+"embed_tokens", vocab, hidden, false).W
	m.norm = norm(p+"norm", hidden)
	if c.TieWordEmbeddings {
		m.head = m.embed
	} else {
		m.head = l.Linear(head, vocab, hidden, false).W
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		lp := fmt.Sprintf("%slayers.%d.", p, i)
		ly := layer{inNorm: norm(lp+"input_layernorm", hidden), postNorm: norm(lp+"post_attention_layernorm", hidden)}
		if s.linear[i] {
			ly.linear = m.bindDeltaNet(l, lp+"linear_attn.")
		} else {
			ly.attn = m.bindAttention(l, lp+"self_attn.", norm)
		}
		if s.moe {
			ly.moe = m.bindMoE(l, lp+"mlp")
		} else {
			inter := c.IntermediateSize
			ly.gate = l.Linear(lp+"mlp.gate_proj", inter, hidden, false)
			ly.up = l.Linear(lp+"mlp.up_proj", inter, hidden, false)
			ly.down = l.Linear(lp+"mlp.down_proj", hidden, inter, false)
		}
		m.layers = append(m.layers, ly)
	}
	return m, l.Err()
}

// mlxNorms reports whether the checkpoint went through mlx-lm's sanitize:
// its first conv1d weight is [C, K, 1] rather than transformers' [C, 1, K].
func mlxNorms(l *nn.Loader, p string, s *settings) bool {
	for i, lin := range s.linear {
		if lin {
			w, ok := l.W.Optional(fmt.Sprintf("%slayers.%d.linear_attn.conv1d.weight", p, i))
			return ok && len(w.Shape) == 3 && w.Shape[2] == 1 && w.Shape[1] != 1
		}
	}
	return false
}

func (m *Model) bindAttention(l *nn.Loader, p string, norm func(string, int) nn.RMSNorm) *attention {
	c := m.cfg
	hidden, bias := c.HiddenSize, c.AttentionBias
	return &attention{
		q:     l.Linear(p+"q_proj", 2*c.QDim(), hidden, bias),
		k:     l.Linear(p+"k_proj", c.KVDim(), hidden, bias),
		v:     l.Linear(p+"v_proj", c.KVDim(), hidden, bias),
		o:     l.Linear(p+"o_proj", hidden, c.QDim(), bias),
		qNorm: norm(p+"q_norm", c.HeadDim),
		kNorm: norm(p+"k_norm", c.HeadDim),
	}
}

func (m *Model) bindDeltaNet(l *nn.Loader, p string) *deltaNet {
	c, s := m.cfg, m.s
	hidden, hv := c.HiddenSize, s.valueHeads
	vDim := hv * s.valueDim
	d := &deltaNet{
		qkv:    l.Linear(p+"in_proj_qkv", s.convDim(), hidden, false),
		z:      l.Linear(p+"in_proj_z", vDim, hidden, false),
		b:      l.Linear(p+"in_proj_b", hv, hidden, false),
		a:      l.Linear(p+"in_proj_a", hv, hidden, false),
		out:    l.Linear(p+"out_proj", hidden, vDim, false),
		dtBias: l.Tensor(p+"dt_bias", hv),
		norm:   l.Tensor(p+"norm.weight", s.valueDim),
	}
	// conv1d.weight is [C, 1, K] (transformers) or [C, K, 1] (mlx-lm):
	// the same bytes as [C, K]
	cw := l.W.Tensor(p + "conv1d.weight")
	if cw.Data != nil {
		if sh := cw.Shape; len(sh) == 3 && sh[0] == s.convDim() && sh[1]*sh[2] == s.convKernel && (sh[1] == 1 || sh[2] == 1) {
			cw.Shape = []int{sh[0], s.convKernel}
		}
		d.conv = l.Weight(cw, s.convDim(), s.convKernel)
	}
	// -exp(A_log) is a constant of the checkpoint, formed once in float32
	// as transformers does on every call
	aw := l.W.Tensor(p + "A_log")
	if aw.Data != nil {
		if len(aw.Shape) != 1 || aw.Shape[0] != hv || aw.Quantized() {
			l.Fail(fmt.Errorf("tensor %q has shape %v, the config implies [%d]", aw.Name, aw.Shape, hv))
			return d
		}
		a := make([]float32, hv)
		tensor.Float32(aw.DType, aw.Data, 0, a)
		data := make([]byte, 4*hv)
		for i, v := range a {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(-float32(math.Exp(float64(v)))))
		}
		d.negA = l.Weight(tensor.Weight{Name: p + "A_log (-exp)", DType: tensor.F32, Shape: []int{hv}, Data: data}, hv)
	}
	return d
}

// AuditIgnore lists the tensors the port skips.
func (m *Model) AuditIgnore() []string { return m.ignore }

// NewCaches makes a KV cache for each full-attention layer and a
// recurrent state for each DeltaNet layer.
func (m *Model) NewCaches(b tensor.Backend, capTokens, chunk int) ([]cache.Layer, error) {
	c, s := m.cfg, m.s
	out := make([]cache.Layer, len(m.layers))
	for i, ly := range m.layers {
		var err error
		if ly.linear != nil {
			out[i], err = cache.NewState(b, []int{s.convKernel - 1, s.convDim()}, []int{s.valueHeads, s.keyDim, s.valueDim}, keep)
		} else {
			out[i], err = cache.NewKV(b, capTokens, c.NumKeyValueHeads, c.HeadDim)
		}
		if err != nil {
			cache.FreeAll(out[:i])
			return nil, err
		}
	}
	return out, nil
}

// Forward records embed → layers → norm → head.
func (m *Model) Forward(g *tensor.Graph, b *family.Batch) (tensor.T, error) {
	n := len(b.Tokens)
	from, _, err := b.MediaRows(g, m.cfg.HiddenSize)
	if err != nil {
		return tensor.T{}, err
	}
	pos := Positions(b)
	end := b.Pos + n
	for _, p := range pos {
		if len(p) > 0 {
			end = max(end, int(slices.Max(p))+1)
		}
	}
	if err := m.rope.CheckPass(b.Pos, end); err != nil {
		return tensor.T{}, err
	}
	rot, err := m.rotary(g, pos, m.rope.Table(end))
	if err != nil {
		return tensor.T{}, err
	}
	ids := b.IDs
	if ids.IsNone() {
		ids = g.InputInts(b.EmbedTokens(from), n)
	}
	x := g.Embed(m.embed, ids)
	for i, md := range b.Media {
		x = g.Splice(x, md.Embeds, g.InputInts(from[i], n))
	}
	for i := range m.layers {
		var err error
		if x, err = m.layers[i].forward(g, m, x, rot, b.Caches[i:i+1]); err != nil {
			return tensor.T{}, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	if !b.AllLogits {
		x = g.Slice(x, 0, n-1, n)
	}
	return g.MatMul(m.norm.Forward(g, x), m.head), g.Err()
}

// ForwardBatch records one new token of each row's sequence in one pass
// (family.BatchModel): the rows share every projection and the MLP or
// experts; each attends to its own KV cache, and each DeltaNet layer's
// convolution and scan run on the row's own recurrent state. The rows
// hold text after text (a batched sequence never holds a picture), so
// mRoPE's three streams are each row's position.
func (m *Model) ForwardBatch(g *tensor.Graph, rows []family.Row) (tensor.T, error) {
	var table *tensor.Rope
	tokens, pos, _, err := family.RowInputs(rows, len(m.layers), func(start, end int) error {
		if t := m.rope.Table(end); table == nil {
			table = t
		} else if t != table {
			return errors.New("its rope table differs from the first row's")
		}
		return m.rope.CheckPass(start, end)
	})
	if err != nil {
		return tensor.T{}, err
	}
	n := len(rows)
	rot, err := m.rotary(g, [3][]int32{pos, pos, pos}, table)
	if err != nil {
		return tensor.T{}, err
	}
	x := g.Embed(m.embed, g.InputInts(tokens, n))
	kvs := make([]cache.Layer, n)
	for i := range m.layers {
		for r, row := range rows {
			kvs[r] = row.Caches[i]
		}
		if x, err = m.layers[i].forward(g, m, x, rot, kvs); err != nil {
			return tensor.T{}, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return g.MatMul(m.norm.Forward(g, x), m.head), g.Err()
}

// forward runs the layer over x's rows; cs holds the layer's cache of
// every row (one sequence) or of each row (a batched step).
func (ly *layer) forward(g *tensor.Graph, m *Model, x tensor.T, rot rotary, cs []cache.Layer) (tensor.T, error) {
	h := ly.inNorm.Forward(g, x)
	var mixed tensor.T
	var err error
	if ly.linear != nil {
		sts := make([]*cache.State, len(cs))
		for i, c := range cs {
			var ok bool
			if sts[i], ok = c.(*cache.State); !ok {
				return x, fmt.Errorf("a linear-attention layer needs a recurrent state, got %T", c)
			}
		}
		mixed, err = ly.linear.forward(g, m, h, sts)
	} else {
		mixed, err = ly.attn.forward(g, m, h, rot, cs)
	}
	if err != nil {
		return x, err
	}
	x = g.Add(x, mixed)
	h = ly.postNorm.Forward(g, x)
	if ly.moe != nil {
		return g.Add(x, ly.moe.forward(g, m, h)), nil
	}
	return g.Add(x, ly.down.Forward(g, g.Mul(g.SiLU(ly.gate.Forward(g, h)), ly.up.Forward(g, h)))), nil
}

// forward is Qwen3_5Attention: the query and its gate come out of q_proj
// interleaved per head ([q | gate] of head_dim each).
func (a *attention) forward(g *tensor.Graph, m *Model, h tensor.T, rot rotary, kvs []cache.Layer) (tensor.T, error) {
	c := m.cfg
	n, heads, kvHeads, hd := g.Shape(h)[0], c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim
	qg := g.Reshape(a.q.Forward(g, h), n, heads, 2*hd)
	q := a.qNorm.Forward(g, g.Slice(qg, -1, 0, hd))
	gate := g.Reshape(g.Slice(qg, -1, hd, 2*hd), n, heads*hd)
	k := a.kNorm.Forward(g, g.Reshape(a.k.Forward(g, h), n, kvHeads, hd))
	v := g.Reshape(a.v.Forward(g, h), n, kvHeads, hd)
	q, k = rot.apply(g, q), rot.apply(g, k)
	o, err := nn.Attend(g, q, k, v, kvs, tensor.AttnSpec{Scale: float32(1 / math.Sqrt(float64(hd)))})
	if err != nil {
		return h, err
	}
	o = g.Mul(g.Reshape(o, n, heads*hd), g.Sigmoid(gate))
	return a.o.Forward(g, o), nil
}

// forward is Qwen3_5GatedDeltaNet: the short convolution over q, k and v,
// the gates, the delta-rule scan and the gated norm. sts holds the state
// of every row (one sequence) or of each row (a batched step: the
// convolution and the scan then run row by row, each on its own state).
func (d *deltaNet) forward(g *tensor.Graph, m *Model, h tensor.T, sts []*cache.State) (tensor.T, error) {
	s := m.s
	n := g.Shape(h)[0]
	keyDim, hv := s.keyHeads*s.keyDim, s.valueHeads
	if len(sts) != 1 && len(sts) != n {
		return h, fmt.Errorf("%d recurrent states for %d rows", len(sts), n)
	}
	steps := make([]cache.Step, len(sts))
	for i, st := range sts {
		var err error
		if steps[i], err = st.Advance(n / len(sts)); err != nil {
			return h, err
		}
	}
	// byRow applies f to each state's rows and stacks the results like like.
	byRow := func(like tensor.T, f func(step cache.Step, lo, hi int) tensor.T) tensor.T {
		if len(steps) == 1 {
			return f(steps[0], 0, n)
		}
		rows := make([]tensor.T, n)
		for i, st := range steps {
			rows[i] = f(st, i, i+1)
		}
		return nn.StackRows(g, like, rows)
	}
	pre := d.qkv.Forward(g, h)
	qkv := g.SiLU(byRow(pre, func(st cache.Step, lo, hi int) tensor.T {
		return g.CausalConv1d(rowsOf(g, pre, lo, hi, n), d.conv, st.ConvIn, st.ConvOut)
	}))
	q := g.Reshape(g.Slice(qkv, -1, 0, keyDim), n, s.keyHeads, s.keyDim)
	k := g.Reshape(g.Slice(qkv, -1, keyDim, 2*keyDim), n, s.keyHeads, s.keyDim)
	v := g.Reshape(g.Slice(qkv, -1, 2*keyDim, s.convDim()), n, hv, s.valueDim)
	z := g.Reshape(d.z.Forward(g, h), n, hv, s.valueDim)
	beta := g.Sigmoid(d.b.Forward(g, h))
	decay := g.Mul(g.Softplus(g.Add(d.a.Forward(g, h), d.dtBias)), d.negA)
	o := byRow(v, func(st cache.Step, lo, hi int) tensor.T {
		row := func(x tensor.T) tensor.T { return rowsOf(g, x, lo, hi, n) }
		return g.GatedDeltaRule(row(q), row(k), row(v), row(decay), row(beta), st.RecIn, st.RecOut)
	})
	o = g.Mul(g.RMSNorm(o, d.norm, float32(m.cfg.RMSNormEps), 0), g.SiLU(z))
	return d.out.Forward(g, g.Reshape(o, n, hv*s.valueDim)), nil
}

// rowsOf is rows [lo, hi) of x's n: x itself when that is all of them.
func rowsOf(g *tensor.Graph, x tensor.T, lo, hi, n int) tensor.T {
	if lo == 0 && hi == n {
		return x
	}
	return g.Slice(x, 0, lo, hi)
}
