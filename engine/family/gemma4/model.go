// Package gemma4 is the targeted port of Gemma 4's text decoder
// (model_type gemma4 with its text_config, and gemma4_text), transcribed
// op for op from transformers 5.17's modeling_gemma4.py: per-layer input
// embeddings, layers that share an earlier layer's keys and values,
// attention_k_eq_v full layers with their own head size, sliding and full
// layers with a rope each (proportional on the full ones), the MoE block
// beside the dense MLP, and the final soft cap. The towers run in
// engine/tower (gemma4vision, gemma4audio); Forward splices their rows
// (vision.go).
package gemma4

import (
	"fmt"
	"math"

	"hearth/engine/cache"
	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/fit"
	"hearth/engine/nn"
	"hearth/engine/tensor"
)

// Family is Gemma 4's registry entry.
var Family = family.Family{
	Name: "gemma4",
	Tier: family.Targeted,
	Accepts: func(c *config.Config) bool {
		return c.TextModelType == "gemma4_text" || c.TextModelType == "gemma4"
	},
	// Vision and audio are the checkpoint's: it takes them where it holds
	// a tower's weights (Media).
	Fidelity:    "parity vs transformers 5.17 (f32 max-abs logit ≤ 1e-4, greedy ids exact)",
	Types:       func() []string { return []string{"gemma4", "gemma4_text"} },
	New:         New,
	CacheLayers: cacheLayers,
	// The towers' soft tokens are spliced in (Forward); the engine runs
	// them where the checkpoint holds them (engine/tower/gemma4audio,
	// engine/tower/gemma4vision).
	Media: func(*config.Config) family.Caps { return family.Audio | family.Vision },
}

// cacheLayers is the cache of each layer that computes keys and values
// (full layers with their own head size and KV heads); the layers that
// share one keep none.
func cacheLayers(c *config.Config) ([]fit.Layer, error) {
	s, err := readSettings(c)
	if err != nil {
		return nil, err
	}
	var out []fit.Layer
	for i := range c.NumHiddenLayers {
		if src, err := s.source(c, i); err != nil || src != i {
			continue
		}
		l := fit.Layer{Kind: fit.Full, KVHeads: s.kvHeads[i], HeadDim: s.headDim[i]}
		if c.LayerTypes[i] == config.Sliding {
			l.Kind, l.Window = fit.Sliding, c.SlidingWindow
		}
		out = append(out, l)
	}
	return out, nil
}

// towerTensors are the multimodal checkpoint's parts this text port does
// not run (the towers and their projections into the text stream).
var towerTensors = []string{"*vision_tower.*", "*audio_tower.*", "*embed_vision.*", "*embed_audio.*"}

// Model is the Gemma 4 text decoder.
type Model struct {
	cfg        *config.Config
	s          *settings
	embed      tensor.T
	head       tensor.T
	norm       nn.RMSNorm
	embedScale float32
	act        func(*tensor.Graph, tensor.T) tensor.T
	layers     []layer
	// per-layer inputs (PLE): the packed table [pleVocab, layers·ple], the
	// projection of the embeddings into it, and the norm of each slice
	pleTable, pleProj tensor.T
	pleNorm           nn.RMSNorm
}

type layer struct {
	full           bool
	window         int
	headDim, kvH   int
	rope           *nn.Rope
	src            int // the layer whose cache holds this layer's keys and values
	q, k, v, o     nn.Linear
	qNorm, kNorm   nn.RMSNorm
	inNorm, postAt nn.RMSNorm // input_layernorm, post_attention_layernorm
	preFF, postFF  nn.RMSNorm
	gate, up, down nn.Linear
	inter          int
	scalar         float32 // layer_scalar
	moe            *moeBlock
	// per-layer input: gate [ple, hidden], projection [hidden, ple], norm
	pleGate, pleProj nn.Linear
	pleNorm          nn.RMSNorm
}

type moeBlock struct {
	router               nn.Linear // proj [experts, hidden]
	routerScale          tensor.T  // scale [hidden], with the 1/√hidden of the router's input
	expertScale          tensor.T  // per_expert_scale [experts]
	experts              nn.Experts
	postFF1, preFF2, pF2 nn.RMSNorm
}

// prefixes are where the text decoder's tensors live: the conditional
// generation checkpoints of transformers 5 and of mlx-vlm, and a text-only
// Gemma4ForCausalLM.
var prefixes = []string{"model.language_model.", "language_model.model.", "model."}

// New binds a checkpoint's tensors and checks the config.
func New(c *config.Config, l *nn.Loader) (family.Model, error) {
	s, err := readSettings(c)
	if err != nil {
		return nil, fmt.Errorf("gemma4: %w", err)
	}
	m := &Model{cfg: c, s: s, embedScale: float32(math.Sqrt(float64(c.HiddenSize)))}
	switch c.HiddenAct {
	case "gelu_pytorch_tanh", "gelu_tanh", "gelu_new", "gelu_fast":
		m.act = (*tensor.Graph).GELUTanh
	case "gelu":
		m.act = (*tensor.Graph).GELU
	case "silu", "swish":
		m.act = (*tensor.Graph).SiLU
	default:
		return nil, fmt.Errorf("gemma4: hidden_activation %q is not supported", c.HiddenAct)
	}
	p := prefixes[len(prefixes)-1]
	for _, cand := range prefixes {
		if l.W.Has(cand+"embed_tokens.weight") || l.W.Has(cand+"embed_tokens.scales") {
			p = cand
			break
		}
	}
	hidden, vocab, eps := c.HiddenSize, c.VocabSize, float32(c.RMSNormEps)
	rms := func(name string, dim int) nn.RMSNorm { return nn.RMSNorm{W: l.Tensor(name+".weight", dim), Eps: eps} }
	m.embed = l.Linear(p+"embed_tokens", vocab, hidden, false).W
	m.norm = rms(p+"norm", hidden)
	m.head = m.embed
	if !c.TieWordEmbeddings {
		head := "lm_head"
		if p == "language_model.model." {
			head = "language_model.lm_head"
		}
		m.head = l.Linear(head, vocab, hidden, false).W
	}
	n := c.NumHiddenLayers
	if s.ple > 0 {
		m.pleTable = l.Linear(p+"embed_tokens_per_layer", s.pleVocab, n*s.ple, false).W
		m.pleProj = l.Linear(p+"per_layer_model_projection", n*s.ple, hidden, false).W
		m.pleNorm = rms(p+"per_layer_projection_norm", s.ple)
	}
	ropes := map[string]*nn.Rope{}
	for i := range n {
		ly, err := m.bindLayer(l, fmt.Sprintf("%slayers.%d.", p, i), i, rms, ropes)
		if err != nil {
			return nil, fmt.Errorf("gemma4: layer %d: %w", i, err)
		}
		m.layers = append(m.layers, ly)
	}
	return m, l.Err()
}

func (m *Model) bindLayer(l *nn.Loader, p string, i int, rms func(string, int) nn.RMSNorm, ropes map[string]*nn.Rope) (layer, error) {
	c, s := m.cfg, m.s
	hidden := c.HiddenSize
	ly := layer{full: c.LayerTypes[i] == config.Full, headDim: s.headDim[i], kvH: s.kvHeads[i], inter: c.IntermediateSize}
	var err error
	if ly.src, err = s.source(c, i); err != nil {
		return ly, err
	}
	rc := c.Rope
	if !ly.full {
		ly.window = c.SlidingWindow
		if c.SlidingRope != nil {
			rc = *c.SlidingRope
		}
	}
	key := fmt.Sprintf("%s/%d", c.LayerTypes[i], ly.headDim)
	if ly.rope = ropes[key]; ly.rope == nil {
		if ly.rope, err = nn.NewRope(rc, ly.headDim, c.MaxPositionEmbeddings); err != nil {
			return ly, err
		}
		ropes[key] = ly.rope
	}
	bias := c.AttentionBias
	a := p + "self_attn."
	qDim := c.NumAttentionHeads * ly.headDim
	ly.q = l.Linear(a+"q_proj", qDim, hidden, bias)
	ly.qNorm = rms(a+"q_norm", ly.headDim)
	if ly.src == i { // a layer that shares keys and values has no weights for them
		ly.k = l.Linear(a+"k_proj", ly.kvH*ly.headDim, hidden, bias)
		if !(s.kEqV && ly.full) {
			ly.v = l.Linear(a+"v_proj", ly.kvH*ly.headDim, hidden, bias)
		}
		ly.kNorm = rms(a+"k_norm", ly.headDim)
	}
	ly.o = l.Linear(a+"o_proj", hidden, qDim, bias)
	ly.inNorm = rms(p+"input_layernorm", hidden)
	ly.postAt = rms(p+"post_attention_layernorm", hidden)
	ly.preFF = rms(p+"pre_feedforward_layernorm", hidden)
	ly.postFF = rms(p+"post_feedforward_layernorm", hidden)
	if s.doubleMLP && ly.src != i {
		ly.inter *= 2
	}
	ly.gate = l.Linear(p+"mlp.gate_proj", ly.inter, hidden, false)
	ly.up = l.Linear(p+"mlp.up_proj", ly.inter, hidden, false)
	ly.down = l.Linear(p+"mlp.down_proj", hidden, ly.inter, false)
	ly.scalar = 1
	if w, ok := l.W.Optional(p + "layer_scalar"); ok {
		if len(w.Shape) != 1 || w.Shape[0] != 1 || w.Quant != nil {
			return ly, fmt.Errorf("layer_scalar has shape %v, want [1]", w.Shape)
		}
		v := make([]float32, 1)
		tensor.Float32(w.DType, w.Data, 0, v)
		ly.scalar = v[0]
	}
	if s.moe {
		ly.moe = m.bindMoE(l, p, rms)
	}
	if s.ple > 0 {
		ly.pleGate = l.Linear(p+"per_layer_input_gate", s.ple, hidden, false)
		ly.pleProj = l.Linear(p+"per_layer_projection", hidden, s.ple, false)
		ly.pleNorm = rms(p+"post_per_layer_input_norm", hidden)
	}
	return ly, nil
}

// bindMoE binds a layer's router and experts: transformers' fused
// experts.gate_up_proj, mlx-lm's stacked experts.switch_mlp, or one
// module per expert.
func (m *Model) bindMoE(l *nn.Loader, p string, rms func(string, int) nn.RMSNorm) *moeBlock {
	s, hidden := m.s, m.cfg.HiddenSize
	b := &moeBlock{
		router:      l.Linear(p+"router.proj", s.experts, hidden, false),
		routerScale: l.Tensor(p+"router.scale", hidden),
		expertScale: l.Tensor(p+"router.per_expert_scale", s.experts),
		postFF1:     rms(p+"post_feedforward_layernorm_1", hidden),
		preFF2:      rms(p+"pre_feedforward_layernorm_2", hidden),
		pF2:         rms(p+"post_feedforward_layernorm_2", hidden),
	}
	names := [3]string{"gate_proj", "up_proj", "down_proj"}
	b.experts = l.Experts(p+"experts.switch_mlp.", p+"experts.", names, s.experts, s.moeInter, hidden)
	return b
}

// AuditIgnore lists the towers' tensors the engine does not run here
// (ignoreFor).
func (m *Model) AuditIgnore() []string { return ignoreFor(m.cfg) }

// NewCaches makes a cache for each layer that computes keys and values (a
// rotating one for sliding layers whose window is shorter than the
// context); a layer that shares an earlier layer's gets a view of that
// cache, and allocates nothing.
func (m *Model) NewCaches(b tensor.Backend, capTokens, chunk int) ([]cache.Layer, error) {
	out := make([]cache.Layer, len(m.layers))
	for i, ly := range m.layers {
		if ly.src != i {
			out[i] = sharedKV{out[ly.src]}
			continue
		}
		var err error
		out[i], err = cache.NewAttention(b, capTokens, ly.window, chunk, ly.kvH, ly.headDim)
		if err != nil {
			cache.FreeAll(out[:i])
			return nil, err
		}
	}
	return out, nil
}

// sharedKV stands in the cache list for a layer that reads another
// layer's cache: the owner is updated, trimmed and freed once.
type sharedKV struct{ owner cache.Layer }

func (s sharedKV) Update(*tensor.Graph, tensor.T, tensor.T) (cache.View, error) {
	return cache.View{}, fmt.Errorf("gemma4: a layer sharing keys and values does not write a cache")
}
func (s sharedKV) Len() int           { return s.owner.Len() }
func (s sharedKV) Trim(n int) int     { return n }
func (s sharedKV) CanTrim(n int) bool { return s.owner.CanTrim(n) }
func (s sharedKV) Bytes() int64       { return 0 }
func (s sharedKV) Free()              {}

// Forward records embed (+ per-layer inputs) → layers → norm → head → cap.
func (m *Model) Forward(g *tensor.Graph, b *family.Batch) (tensor.T, error) {
	c := m.cfg
	n := len(b.Tokens)
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(b.Pos + i)
	}
	posT := g.InputInts(pos, n)
	// Media rows (Batch.Media: a tower's soft tokens) are embedded as
	// pad_token_id for the embedding and the per-layer table alike
	// (Gemma4Model puts it there), then replaced after the embedding
	// scale; the per-layer projection reads the replaced rows.
	from, spans, err := b.MediaRows(g, c.HiddenSize)
	if err != nil {
		return tensor.T{}, err
	}
	spans = m.pictureSpans(b, spans)
	ids := b.IDs
	if ids.IsNone() {
		ids = g.InputInts(mediaTokens(b, from, padID(c)), n)
	}
	x := g.Scale(g.Embed(m.embed, ids), m.embedScale)
	for k, md := range b.Media {
		x = g.Splice(x, md.Embeds, g.InputInts(from[k], n))
	}
	for i := range m.layers {
		if err := m.layers[i].rope.CheckPass(b.Pos, b.Pos+n); err != nil {
			return tensor.T{}, err
		}
	}
	x, err = m.decoder(g, x, ids, posT, []int{b.Pos + n}, func(i int) []cache.Layer { return b.Caches[i : i+1] }, spans)
	if err != nil {
		return tensor.T{}, err
	}
	if !b.AllLogits {
		x = g.Slice(x, 0, n-1, n)
	}
	return m.logits(g, x), g.Err()
}

// ForwardBatch records one new token of each row's sequence in one pass
// (family.BatchModel): the rows share the projections, the per-layer
// inputs and the MLP and experts, and each attends to its own caches
// (a shared-KV layer to its row's view of the layer it shares).
func (m *Model) ForwardBatch(g *tensor.Graph, rows []family.Row) (tensor.T, error) {
	tokens, pos, ends, err := family.RowInputs(rows, len(m.layers), func(start, end int) error {
		for i := range m.layers {
			if err := m.layers[i].rope.CheckPass(start, end); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return tensor.T{}, err
	}
	n := len(rows)
	ids := g.InputInts(tokens, n)
	x := g.Scale(g.Embed(m.embed, ids), m.embedScale)
	kvs := make([]cache.Layer, n)
	x, err = m.decoder(g, x, ids, g.InputInts(pos, n), ends, func(i int) []cache.Layer {
		for r, row := range rows {
			kvs[r] = row.Caches[i]
		}
		return kvs
	}, nil)
	if err != nil {
		return tensor.T{}, err
	}
	return m.logits(g, x), g.Err()
}

// decoder runs the layers over the embedded rows x. caches(i) is layer i's
// cache of every row (one sequence) or of each row (a batched step), ends
// the end of each one's positions after the pass.
func (m *Model) decoder(g *tensor.Graph, x, ids, pos tensor.T, ends []int, caches func(int) []cache.Layer, spans []tensor.Span) (tensor.T, error) {
	c, s := m.cfg, m.s
	n := g.Shape(x)[0]
	var ple tensor.T // [n, layers·ple]: each layer's slice of the per-layer inputs
	if s.ple > 0 {
		L := c.NumHiddenLayers
		tok := g.Scale(g.Embed(m.pleTable, ids), float32(math.Sqrt(float64(s.ple))))
		proj := g.Scale(g.MatMul(x, m.pleProj), float32(1/math.Sqrt(float64(c.HiddenSize))))
		proj = g.Reshape(m.pleNorm.Forward(g, g.Reshape(proj, n, L, s.ple)), n, L*s.ple)
		ple = g.Scale(g.Add(proj, tok), float32(1/math.Sqrt2))
	}
	views := make([][]cache.View, len(m.layers))
	for i := range m.layers {
		var err error
		if x, err = m.layer(g, i, x, pos, ple, ends, caches(i), views, spans); err != nil {
			return tensor.T{}, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return x, nil
}

// logits is the head over the final norm of x.
func (m *Model) logits(g *tensor.Graph, x tensor.T) tensor.T {
	logits := g.MatMul(m.norm.Forward(g, x), m.head)
	if m.s.finalCap > 0 {
		logits = g.TanhCap(logits, m.s.finalCap)
	}
	return logits
}

func (m *Model) layer(g *tensor.Graph, i int, x, pos, ple tensor.T, ends []int, kvs []cache.Layer, views [][]cache.View, spans []tensor.Span) (tensor.T, error) {
	ly, c := &m.layers[i], m.cfg
	n := g.Shape(x)[0]
	h := ly.inNorm.Forward(g, x)
	q := g.Reshape(ly.q.Forward(g, h), n, c.NumAttentionHeads, ly.headDim)
	q = nn.RotateRows(g, ly.qNorm.Forward(g, q), pos, ly.rope, ends)
	if ly.src == i {
		k := g.Reshape(ly.k.Forward(g, h), n, ly.kvH, ly.headDim)
		v := k // attention_k_eq_v: the values are the keys' projection, before k_norm and rope
		if !ly.v.W.IsNone() {
			v = g.Reshape(ly.v.Forward(g, h), n, ly.kvH, ly.headDim)
		}
		k = nn.RotateRows(g, ly.kNorm.Forward(g, k), pos, ly.rope, ends)
		v = g.RMSNorm(v, tensor.T{}, ly.qNorm.Eps, 0) // v_norm has no scale
		var err error
		if views[i], err = nn.UpdateRows(g, k, v, kvs); err != nil {
			return x, err
		}
	} else {
		views[i] = views[ly.src]
	}
	spec := tensor.AttnSpec{Scale: 1, Window: ly.window}
	if !ly.full {
		spec.Spans = spans // a picture's tokens see each other on sliding layers only
	}
	attn, err := nn.AttendViews(g, q, views[i], spec)
	if err != nil {
		return x, err
	}
	a := ly.o.Forward(g, g.Reshape(attn, n, c.NumAttentionHeads*ly.headDim))
	x = g.Add(x, ly.postAt.Forward(g, a))

	hf := ly.preFF.Forward(g, x)
	mlp := ly.down.Forward(g, g.Mul(m.act(g, ly.gate.Forward(g, hf)), ly.up.Forward(g, hf)))
	if ly.moe != nil {
		mlp = g.Add(ly.moe.postFF1.Forward(g, mlp), ly.moe.forward(g, m, x))
	}
	x = g.Add(x, ly.postFF.Forward(g, mlp))

	if m.s.ple > 0 {
		pli := g.Slice(ple, -1, i*m.s.ple, (i+1)*m.s.ple)
		y := g.Mul(m.act(g, ly.pleGate.Forward(g, x)), pli)
		x = g.Add(x, ly.pleNorm.Forward(g, ly.pleProj.Forward(g, y)))
	}
	if ly.scalar != 1 {
		x = g.Scale(x, ly.scalar)
	}
	return x, nil
}

// forward is the experts' half of a MoE layer, on the residual stream r:
// route on norm(r)·scale/√hidden (softmax, top k renormalised, times the
// chosen experts' per_expert_scale), experts on pre_feedforward_layernorm_2(r),
// then post_feedforward_layernorm_2.
func (b *moeBlock) forward(g *tensor.Graph, m *Model, r tensor.T) tensor.T {
	s := m.s
	eps := b.postFF1.Eps
	ri := g.Scale(g.RMSNorm(r, b.routerScale, eps, 0), float32(1/math.Sqrt(float64(m.cfg.HiddenSize))))
	route := g.RouteScaled(b.router.Forward(g, ri), s.topK, tensor.RouteSoftmax, true, b.expertScale)
	return b.pF2.Forward(g, b.experts.Forward(g, m.act, b.preFF2.Forward(g, r), route))
}
