package universal

import (
	"fmt"
	"math"

	"hearth/engine/cache"
	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/nn"
	"hearth/engine/tensor"
)

// Model is the universal pre-norm decoder.
type Model struct {
	cfg    *config.Config
	desc   Descriptor
	embed  tensor.T
	layers []layer
	norm   nn.RMSNorm
	head   tensor.T
	rope   *tensor.Rope
}

type layer struct {
	attnNorm, mlpNorm nn.RMSNorm
	q, k, v, o        nn.Linear
	qNorm, kNorm      nn.RMSNorm
	gate, up, down    nn.Linear
	window            int
}

// New binds the checkpoint's tensors by their Hugging Face names.
func New(c *config.Config, l *nn.Loader) (family.Model, error) {
	d, _, ok := Lookup(c.TextModelType)
	if !ok {
		return nil, fmt.Errorf("universal: no descriptor for model_type %q", c.TextModelType)
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		return nil, fmt.Errorf("universal %s: hidden_act %q is not supported (silu is)", c.TextModelType, c.HiddenAct)
	}
	rope, err := nn.NewRope(c.Rope, c.HeadDim)
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: c, desc: d, rope: rope}
	eps := float32(c.RMSNormEps)
	hidden, inter := c.HiddenSize, c.IntermediateSize
	m.embed = l.Linear("model.embed_tokens", c.VocabSize, hidden, false).W
	m.norm = nn.RMSNorm{W: l.Tensor("model.norm.weight", hidden), Eps: eps}
	if c.TieWordEmbeddings {
		m.head = m.embed
	} else {
		m.head = l.Linear("lm_head", c.VocabSize, hidden, false).W
	}
	qkvBias := d.QKVBias || c.AttentionBias
	for i := 0; i < c.NumHiddenLayers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		ly := layer{
			attnNorm: nn.RMSNorm{W: l.Tensor(p+"input_layernorm.weight", hidden), Eps: eps},
			mlpNorm:  nn.RMSNorm{W: l.Tensor(p+"post_attention_layernorm.weight", hidden), Eps: eps},
			q:        l.Linear(p+"self_attn.q_proj", c.QDim(), hidden, qkvBias),
			k:        l.Linear(p+"self_attn.k_proj", c.KVDim(), hidden, qkvBias),
			v:        l.Linear(p+"self_attn.v_proj", c.KVDim(), hidden, qkvBias),
			o:        l.Linear(p+"self_attn.o_proj", hidden, c.QDim(), c.AttentionBias),
			gate:     l.Linear(p+"mlp.gate_proj", inter, hidden, c.MLPBias),
			up:       l.Linear(p+"mlp.up_proj", inter, hidden, c.MLPBias),
			down:     l.Linear(p+"mlp.down_proj", hidden, inter, c.MLPBias),
		}
		if d.QKNorm {
			ly.qNorm = nn.RMSNorm{W: l.Tensor(p+"self_attn.q_norm.weight", c.HeadDim), Eps: eps}
			ly.kNorm = nn.RMSNorm{W: l.Tensor(p+"self_attn.k_norm.weight", c.HeadDim), Eps: eps}
		}
		if c.IsSliding(i) {
			ly.window = c.SlidingWindow
		}
		m.layers = append(m.layers, ly)
	}
	return m, l.Err()
}

// AuditIgnore lists the tensors the descriptor skips.
func (m *Model) AuditIgnore() []string { return m.desc.Ignore }

// NewCaches makes a rotating cache for sliding layers whose window is
// shorter than the context, a plain one otherwise.
func (m *Model) NewCaches(b tensor.Backend, capTokens, chunk int) ([]cache.Layer, error) {
	out := make([]cache.Layer, len(m.layers))
	for i, ly := range m.layers {
		var err error
		if ly.window > 0 && ly.window+chunk < capTokens {
			out[i], err = cache.NewRotating(b, ly.window, chunk, m.cfg.NumKeyValueHeads, m.cfg.HeadDim)
		} else {
			out[i], err = cache.NewKV(b, capTokens, m.cfg.NumKeyValueHeads, m.cfg.HeadDim)
		}
		if err != nil {
			for _, c := range out[:i] {
				c.Free()
			}
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
	x := g.Embed(m.embed, g.InputInts(b.Tokens, n))
	for i := range m.layers {
		var err error
		if x, err = m.layers[i].forward(g, m, x, posT, b.Caches[i]); err != nil {
			return tensor.T{}, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	if !b.AllLogits {
		x = g.Slice(x, 0, n-1, n)
	}
	return g.MatMul(m.norm.Forward(g, x), m.head), g.Err()
}

func (ly *layer) forward(g *tensor.Graph, m *Model, x, pos tensor.T, kv cache.Layer) (tensor.T, error) {
	c := m.cfg
	n := g.Shape(x)[0]
	h := ly.attnNorm.Forward(g, x)
	q := g.Reshape(ly.q.Forward(g, h), n, c.NumAttentionHeads, c.HeadDim)
	k := g.Reshape(ly.k.Forward(g, h), n, c.NumKeyValueHeads, c.HeadDim)
	v := g.Reshape(ly.v.Forward(g, h), n, c.NumKeyValueHeads, c.HeadDim)
	if m.desc.QKNorm {
		q = ly.qNorm.Forward(g, q)
		k = ly.kNorm.Forward(g, k)
	}
	q = g.RoPE(q, pos, m.rope)
	k = g.RoPE(k, pos, m.rope)
	view, err := kv.Update(g, k, v)
	if err != nil {
		return x, err
	}
	spec := view.Spec(tensor.AttnSpec{Scale: float32(1 / math.Sqrt(float64(c.HeadDim))), Window: ly.window})
	a := g.Attention(q, view.K, view.V, spec)
	x = g.Add(x, ly.o.Forward(g, g.Reshape(a, n, c.QDim())))
	h = ly.mlpNorm.Forward(g, x)
	mlp := ly.down.Forward(g, g.Mul(g.SiLU(ly.gate.Forward(g, h)), ly.up.Forward(g, h)))
	return g.Add(x, mlp), nil
}
