package universal

import (
	"encoding/json"
	"fmt"
	"math"

	"hearth/engine/cache"
	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/nn"
	"hearth/engine/tensor"
)

// Model is the universal decoder.
type Model struct {
	cfg        *config.Config
	desc       Descriptor
	embed      tensor.T
	embedScale float32 // 0 = none
	layers     []layer
	norm       norm
	head       tensor.T
	finalCap   float32 // final_logit_softcapping; 0 = none
	act        func(g *tensor.Graph, x tensor.T) tensor.T
	attnScale  float32
	attnCap    float32
	// Granite's multipliers (0 = none): residual scales each sublayer
	// output before its residual add; logits are divided by logitsScale.
	residualMult float32
	logitsScale  float32
	moe          *moeConfig // nil: dense feed-forward blocks
}

type layer struct {
	norms     [4]norm // by position in the block; unused ones are zero
	q, k, v   nn.Linear
	qkv       nn.Linear // fused (Phi-3)
	o         nn.Linear
	qNorm     norm
	kNorm     norm
	gate, up  nn.Linear
	gateUp    nn.Linear // fused (Phi-3, GLM-4)
	down      nn.Linear
	rope      *nn.Rope // nil: this layer uses no rope (SmolLM3's NoPE layers)
	window    int
	hasGateUp bool
	moe       *moeBlock // a sparse feed-forward block (moe.go)
}

// norm is one normalization layer of the descriptor's kind.
type norm struct {
	kind  NormKind
	w, b  tensor.T
	eps   float32
	valid bool
}

func (n norm) forward(g *tensor.Graph, x tensor.T) tensor.T {
	switch n.kind {
	case LayerNorm:
		return g.LayerNorm(x, n.w, n.b, n.eps)
	case OffsetRMSNorm:
		return g.RMSNorm(x, n.w, n.eps, 1)
	default:
		return g.RMSNorm(x, n.w, n.eps, 0)
	}
}

// prefixes are where the decoder's tensors live: a ForCausalLM save, and
// the text model of a multimodal (ForConditionalGeneration) checkpoint as
// transformers 5 and as the hub's older saves and mlx-vlm/mlx-lm keep it.
// The one holding embed_tokens wins.
var prefixes = []struct{ model, head string }{
	{"model.language_model.", "lm_head"},
	{"language_model.model.", "language_model.lm_head"},
	// a bare decoder (AutoModel's save, as Qwen3-Embedding ships): no head
	{"", "lm_head"},
	{"model.", "lm_head"},
}

// New binds the checkpoint's tensors by their Hugging Face names.
func New(c *config.Config, l *nn.Loader) (family.Model, error) {
	d, _, ok := Lookup(c.TextModelType)
	if !ok {
		return nil, fmt.Errorf("universal: no descriptor for model_type %q", c.TextModelType)
	}
	m := &Model{cfg: c, desc: d}
	var err error
	if m.act, err = activation(c.HiddenAct); err != nil {
		return nil, fmt.Errorf("universal %s: %w", c.TextModelType, err)
	}
	extra := config.NewFields(c.Text)
	eps := float32(c.RMSNormEps)
	if d.NormEpsKey != "" {
		eps = float32(extra.Float(d.NormEpsKey, c.RMSNormEps))
	}
	m.attnScale = float32(1 / math.Sqrt(float64(c.HeadDim)))
	if s := extra.Float("query_pre_attn_scalar", 0); s > 0 {
		m.attnScale = float32(1 / math.Sqrt(s))
	}
	m.attnCap = float32(extra.Float("attn_logit_softcapping", 0))
	m.finalCap = float32(extra.Float("final_logit_softcapping", 0))
	if d.EmbedScale {
		m.embedScale = float32(math.Sqrt(float64(c.HiddenSize)))
	}
	if d.Multipliers {
		// Absent keys take GraniteConfig's defaults, all 1 (the attention
		// scale too, not 1/√head_dim).
		if e := float32(extra.Float("embedding_multiplier", 1)); e != 1 {
			m.embedScale = e
		}
		m.attnScale = float32(extra.Float("attention_multiplier", 1))
		m.residualMult = float32(extra.Float("residual_multiplier", 1))
		m.logitsScale = float32(extra.Float("logits_scaling", 1))
		if m.logitsScale == 0 {
			return nil, fmt.Errorf(`universal %s: "logits_scaling" must not be 0`, c.TextModelType)
		}
	}
	if extra.Err() != nil {
		return nil, fmt.Errorf("universal %s: %w", c.TextModelType, extra.Err())
	}
	if err := m.configureMoE(); err != nil {
		return nil, fmt.Errorf("universal %s: %w", c.TextModelType, err)
	}
	full, err := nn.NewRope(c.Rope, c.HeadDim, c.MaxPositionEmbeddings)
	if err != nil {
		return nil, err
	}
	sliding := full
	if c.SlidingRope != nil {
		if sliding, err = nn.NewRope(*c.SlidingRope, c.HeadDim, c.MaxPositionEmbeddings); err != nil {
			return nil, err
		}
	}
	var useRope []int
	if raw, ok := c.Text["no_rope_layers"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &useRope); err != nil || len(useRope) != c.NumHiddenLayers {
			return nil, fmt.Errorf(`"no_rope_layers" must list 0 or 1 for each of the %d layers`, c.NumHiddenLayers)
		}
	}
	if d.RopeTraditional {
		full, sliding = traditional(full), traditional(sliding)
	}

	hidden, vocab := c.HiddenSize, c.VocabSize
	newNorm := func(name string, dim int) norm {
		n := norm{kind: d.Norm, eps: eps, valid: true, w: l.Tensor(name+".weight", dim)}
		if d.Norm == LayerNorm {
			n.b = l.Tensor(name+".bias", dim)
		}
		return n
	}
	p, head := prefixes[len(prefixes)-1].model, prefixes[len(prefixes)-1].head
	for _, pre := range prefixes {
		if l.W.Has(pre.model+"embed_tokens.weight") || l.W.Has(pre.model+"embed_tokens.scales") {
			p, head = pre.model, pre.head
			break
		}
	}
	m.embed = l.Linear(p+"embed_tokens", vocab, hidden, false).W
	m.norm = newNorm(p+"norm", hidden)
	if c.TieWordEmbeddings {
		m.head = m.embed
	} else {
		m.head = l.Linear(head, vocab, hidden, false).W
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		ly := m.bindLayer(l, fmt.Sprintf("%slayers.%d.", p, i), newNorm)
		ly.rope = full
		if c.IsSliding(i) {
			ly.window, ly.rope = c.SlidingWindow, sliding
		}
		if useRope != nil && useRope[i] == 0 {
			ly.rope = nil
		}
		m.layers = append(m.layers, ly)
	}
	return m, l.Err()
}

func (m *Model) bindLayer(l *nn.Loader, p string, newNorm func(string, int) norm) layer {
	c, d := m.cfg, m.desc
	hidden, inter := c.HiddenSize, c.IntermediateSize
	qkvBias := d.QKVBias || d.AllBias || c.AttentionBias
	oBias := d.AllBias || (c.AttentionBias && !d.NoOBias)
	var ly layer
	names := map[BlockKind][4]string{
		PreNorm:  {"input_layernorm", "", "post_attention_layernorm", ""},
		Sandwich: {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"},
		PostNorm: {"", "post_attention_layernorm", "", "post_feedforward_layernorm"},
		GLM:      {"input_layernorm", "post_self_attn_layernorm", "post_attention_layernorm", "post_mlp_layernorm"},
	}[d.Block]
	for i, name := range names {
		if name != "" {
			ly.norms[i] = newNorm(p+name, hidden)
		}
	}
	a := p + "self_attn."
	if d.FusedQKV {
		ly.qkv = l.Linear(a+"qkv_proj", c.QDim()+2*c.KVDim(), hidden, qkvBias)
	} else {
		ly.q = l.Linear(a+"q_proj", c.QDim(), hidden, qkvBias)
		ly.k = l.Linear(a+"k_proj", c.KVDim(), hidden, qkvBias)
		ly.v = l.Linear(a+"v_proj", c.KVDim(), hidden, qkvBias)
	}
	ly.o = l.Linear(a+"o_proj", hidden, c.QDim(), oBias)
	switch d.QKNorm {
	case PerHead:
		ly.qNorm, ly.kNorm = newNorm(a+"q_norm", c.HeadDim), newNorm(a+"k_norm", c.HeadDim)
	case FullWidth:
		ly.qNorm, ly.kNorm = newNorm(a+"q_norm", c.QDim()), newNorm(a+"k_norm", c.KVDim())
	}
	if moe, ok := m.bindMoE(l, p); ok {
		ly.moe = moe
		return ly
	}
	mlpBias := d.AllBias || c.MLPBias
	switch {
	case d.MLP == Plain:
		ly.up = l.Linear(p+"mlp.c_fc", inter, hidden, mlpBias)
		ly.down = l.Linear(p+"mlp.c_proj", hidden, inter, mlpBias)
	case d.FusedUp:
		ly.gateUp = l.Linear(p+"mlp.gate_up_proj", 2*inter, hidden, mlpBias)
		ly.hasGateUp = true
		ly.down = l.Linear(p+"mlp.down_proj", hidden, inter, mlpBias)
	default:
		ly.gate = l.Linear(p+"mlp.gate_proj", inter, hidden, mlpBias)
		ly.up = l.Linear(p+"mlp.up_proj", inter, hidden, mlpBias)
		ly.down = l.Linear(p+"mlp.down_proj", hidden, inter, mlpBias)
	}
	return ly
}

// AuditIgnore lists the tensors the descriptor skips.
func (m *Model) AuditIgnore() []string { return m.desc.Ignore }

// RopeSwitch is where the layers' LongRoPE changes tables (0: never): a
// pass of several tokens that straddles it rotates the positions before
// it with the long table, which single steps would not (engine's
// speculative passes stay on one side).
func (m *Model) RopeSwitch() int {
	for _, ly := range m.layers {
		if ly.rope != nil && ly.rope.SwitchAt() > 0 {
			return ly.rope.SwitchAt()
		}
	}
	return 0
}

// NewCaches makes a rotating cache for sliding layers whose window is
// shorter than the context, a plain one otherwise.
func (m *Model) NewCaches(b tensor.Backend, capTokens, chunk int) ([]cache.Layer, error) {
	out := make([]cache.Layer, len(m.layers))
	for i, ly := range m.layers {
		var err error
		out[i], err = cache.NewAttention(b, capTokens, ly.window, chunk, m.cfg.NumKeyValueHeads, m.cfg.HeadDim)
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
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(b.Pos + i)
	}
	posT := g.InputInts(pos, n)
	from, spans, err := b.MediaRows(g, m.cfg.HiddenSize)
	if err != nil {
		return tensor.T{}, err
	}
	ids := b.IDs
	if ids.IsNone() {
		ids = g.InputInts(b.EmbedTokens(from), n)
	}
	x := g.Embed(m.embed, ids)
	if m.embedScale != 0 {
		x = g.Scale(x, m.embedScale)
	}
	for i, md := range b.Media {
		x = g.Splice(x, md.Embeds, g.InputInts(from[i], n))
	}
	if !m.desc.MediaSpans {
		spans = nil
	}
	for i := range m.layers {
		if r := m.layers[i].rope; r != nil {
			if err := r.CheckPass(b.Pos, b.Pos+n); err != nil {
				return tensor.T{}, err
			}
		}
	}
	for i := range m.layers {
		var err error
		if x, err = m.layers[i].forward(g, m, x, posT, []int{b.Pos + n}, b.Caches[i:i+1], spans); err != nil {
			return tensor.T{}, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	if b.Hidden {
		return m.norm.forward(g, x), g.Err()
	}
	if !b.AllLogits {
		x = g.Slice(x, 0, n-1, n)
	}
	return m.logits(g, x), g.Err()
}

// ForwardBatch records one new token of each row's sequence in one pass
// (family.BatchModel): the rows share the projections and the MLP, and
// each attends to its own caches.
func (m *Model) ForwardBatch(g *tensor.Graph, rows []family.Row) (tensor.T, error) {
	ids, pos, ends, err := family.RowInputs(rows, len(m.layers), func(start, end int) error {
		for _, ly := range m.layers {
			if ly.rope != nil {
				if err := ly.rope.CheckPass(start, end); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return tensor.T{}, err
	}
	n := len(rows)
	posT := g.InputInts(pos, n)
	x := g.Embed(m.embed, g.InputInts(ids, n))
	if m.embedScale != 0 {
		x = g.Scale(x, m.embedScale)
	}
	kvs := make([]cache.Layer, n)
	for i := range m.layers {
		for j, r := range rows {
			kvs[j] = r.Caches[i]
		}
		if x, err = m.layers[i].forward(g, m, x, posT, ends, kvs, nil); err != nil {
			return tensor.T{}, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return m.logits(g, x), g.Err()
}

// logits is the head over the final norm of x.
func (m *Model) logits(g *tensor.Graph, x tensor.T) tensor.T {
	logits := g.MatMul(m.norm.forward(g, x), m.head)
	if m.logitsScale != 0 && m.logitsScale != 1 {
		logits = g.Scale(logits, 1/m.logitsScale)
	}
	if m.finalCap > 0 {
		logits = g.TanhCap(logits, m.finalCap)
	}
	return logits
}

// forward runs the layer over x's rows. kvs holds one cache, taking every
// row (one sequence's new tokens), or one per row (a batched step); ends
// has the end of each cache's positions after the pass.
func (ly *layer) forward(g *tensor.Graph, m *Model, x, pos tensor.T, ends []int, kvs []cache.Layer, spans []tensor.Span) (tensor.T, error) {
	pre := func(i int, x tensor.T) tensor.T {
		if ly.norms[i].valid {
			return ly.norms[i].forward(g, x)
		}
		return x
	}
	a, err := ly.attention(g, m, pre(0, x), pos, ends, kvs, spans)
	if err != nil {
		return x, err
	}
	resid := func(y tensor.T) tensor.T {
		if m.residualMult != 0 && m.residualMult != 1 {
			return g.Scale(y, m.residualMult)
		}
		return y
	}
	x = g.Add(x, resid(pre(1, a)))
	return g.Add(x, resid(pre(3, ly.mlp(g, m, pre(2, x))))), nil
}

func (ly *layer) attention(g *tensor.Graph, m *Model, h, pos tensor.T, ends []int, kvs []cache.Layer, spans []tensor.Span) (tensor.T, error) {
	c := m.cfg
	n := g.Shape(h)[0]
	var q, k, v tensor.T
	if !ly.qkv.W.IsNone() {
		qkv := ly.qkv.Forward(g, h)
		q = g.Slice(qkv, -1, 0, c.QDim())
		k = g.Slice(qkv, -1, c.QDim(), c.QDim()+c.KVDim())
		v = g.Slice(qkv, -1, c.QDim()+c.KVDim(), c.QDim()+2*c.KVDim())
	} else {
		q, k, v = ly.q.Forward(g, h), ly.k.Forward(g, h), ly.v.Forward(g, h)
	}
	if m.desc.QKNorm == FullWidth {
		q, k = ly.qNorm.forward(g, q), ly.kNorm.forward(g, k)
	}
	q = g.Reshape(q, n, c.NumAttentionHeads, c.HeadDim)
	k = g.Reshape(k, n, c.NumKeyValueHeads, c.HeadDim)
	v = g.Reshape(v, n, c.NumKeyValueHeads, c.HeadDim)
	if m.desc.QKNorm == PerHead {
		q, k = ly.qNorm.forward(g, q), ly.kNorm.forward(g, k)
	}
	if ly.rope != nil {
		q, k = nn.RotateRows(g, q, pos, ly.rope, ends), nn.RotateRows(g, k, pos, ly.rope, ends)
	}
	spec := tensor.AttnSpec{Scale: m.attnScale, Window: ly.window, Softcap: m.attnCap, Spans: spans}
	out, err := nn.Attend(g, q, k, v, kvs, spec)
	if err != nil {
		return h, err
	}
	return ly.o.Forward(g, g.Reshape(out, n, c.QDim())), nil
}

func (ly *layer) mlp(g *tensor.Graph, m *Model, h tensor.T) tensor.T {
	if ly.moe != nil {
		return ly.moe.forward(g, m, h)
	}
	if m.desc.MLP == Plain {
		return ly.down.Forward(g, m.act(g, ly.up.Forward(g, h)))
	}
	var gate, up tensor.T
	if ly.hasGateUp {
		gu := ly.gateUp.Forward(g, h)
		inter := m.cfg.IntermediateSize
		gate, up = g.Slice(gu, -1, 0, inter), g.Slice(gu, -1, inter, 2*inter)
	} else {
		gate, up = ly.gate.Forward(g, h), ly.up.Forward(g, h)
	}
	return ly.down.Forward(g, g.Mul(m.act(g, gate), up))
}

// activation maps a Hugging Face hidden_act name onto an op.
func activation(name string) (func(*tensor.Graph, tensor.T) tensor.T, error) {
	switch name {
	case "", "silu", "swish":
		return (*tensor.Graph).SiLU, nil
	case "gelu_pytorch_tanh", "gelu_new", "gelu_fast", "gelu_tanh":
		return (*tensor.Graph).GELUTanh, nil
	case "gelu":
		return (*tensor.Graph).GELU, nil
	}
	return nil, fmt.Errorf("hidden_act %q is not supported (silu, gelu, gelu_pytorch_tanh are)", name)
}

// traditional makes a copy of r that rotates adjacent pairs.
func traditional(r *nn.Rope) *nn.Rope { return r.WithTraditional() }
