package universal

import (
	"fmt"
	"slices"

	"hearth/engine/config"
	"hearth/engine/nn"
	"hearth/engine/tensor"
)

// MoE describes a model_type whose feed-forward blocks (all, or those the
// config picks) are sparse mixtures of experts: a router over
// config-counted experts, each a gated MLP, of which each token runs its
// top k. Transcribed from transformers' modeling_{qwen3_moe, qwen2_moe,
// mixtral, olmoe}.py; checkpoint layouts from those and mlx-lm's sanitize.
type MoE struct {
	// Prefix is the module of the router and experts under each layer
	// ("mlp"; Mixtral's "block_sparse_moe", which transformers 5 renames to
	// "mlp": both are accepted).
	Prefix string
	// ExpertsKey is the config key of the expert count. The other spelling
	// (num_experts, num_local_experts) is read when it is absent:
	// transformers 5 writes num_local_experts for Qwen3-MoE, whose Hub
	// checkpoints say num_experts.
	ExpertsKey string
	// InterKey is the config key of each expert's width; "" means
	// intermediate_size.
	InterKey string
	// AlwaysNorm renormalises the top-k probabilities to sum to 1
	// (Mixtral); otherwise norm_topk_prob says.
	AlwaysNorm bool
	// Shared adds Qwen2-MoE's shared expert (width
	// shared_expert_intermediate_size) scaled by sigmoid(shared_expert_gate).
	Shared bool
	// SparseStep honours decoder_sparse_step and mlp_only_layers: the other
	// layers have a dense MLP of width intermediate_size.
	SparseStep bool
	// Names are the per-expert module names of gate, up and down in Hugging
	// Face checkpoints (default gate_proj, up_proj, down_proj; Mixtral w1,
	// w3, w2). MLX's stacked switch_mlp always uses gate_proj, up_proj,
	// down_proj.
	Names [3]string
}

// moeConfig is a MoE model's numbers, read from config.json once.
type moeConfig struct {
	experts, topK, inter, sharedInter int
	norm                              bool
	sparse                            []bool // per layer
}

// moeBlock is one layer's sparse feed-forward block.
type moeBlock struct {
	router  nn.Linear
	experts nn.Experts
	// shared expert (Qwen2-MoE)
	shared            bool
	sGate, sUp, sDown nn.Linear
	sharedGate        nn.Linear // [1, hidden]
}

// configureMoE reads the MoE numbers of the config; dense descriptors
// need none.
func (m *Model) configureMoE() error {
	d := m.desc.MoE
	if d == nil {
		return nil
	}
	c := m.cfg
	ex := config.NewFields(c.Text)
	experts := 0
	for _, key := range []string{d.ExpertsKey, "num_experts", "num_local_experts"} {
		if experts = ex.Int(key, 0); experts != 0 {
			break
		}
	}
	mc := &moeConfig{
		experts: experts,
		topK:    ex.Int("num_experts_per_tok", 0),
		inter:   c.IntermediateSize,
		norm:    d.AlwaysNorm || ex.Bool("norm_topk_prob", false),
	}
	if d.InterKey != "" {
		mc.inter = ex.Int(d.InterKey, 0)
	}
	if d.Shared {
		mc.sharedInter = ex.Int("shared_expert_intermediate_size", 0)
	}
	step := 1
	var dense []int
	if d.SparseStep {
		step = ex.Int("decoder_sparse_step", 1)
		dense = ex.Ints("mlp_only_layers")
	}
	if v := ex.Float("clip_qkv", 0); v != 0 {
		return fmt.Errorf(`"clip_qkv" %v is not supported`, v)
	}
	if err := ex.Err(); err != nil {
		return err
	}
	switch {
	case mc.experts < 1:
		return fmt.Errorf("%q must be a positive expert count", d.ExpertsKey)
	case mc.topK < 1 || mc.topK > mc.experts:
		return fmt.Errorf(`"num_experts_per_tok" %d must be in [1, %d]`, mc.topK, mc.experts)
	case mc.inter < 1:
		return fmt.Errorf("the experts' intermediate size must be positive")
	case d.Shared && mc.sharedInter < 1:
		return fmt.Errorf(`"shared_expert_intermediate_size" must be positive`)
	case step < 1:
		return fmt.Errorf(`"decoder_sparse_step" must be positive`)
	}
	mc.sparse = make([]bool, c.NumHiddenLayers)
	for i := range mc.sparse {
		mc.sparse[i] = !slices.Contains(dense, i) && (i+1)%step == 0
	}
	m.moe = mc
	return nil
}

// bindMoE binds the sparse block of the layer at prefix p
// ("model.layers.N."), or reports false for a dense layer.
func (m *Model) bindMoE(l *nn.Loader, p string) (*moeBlock, bool) {
	if m.moe == nil {
		return nil, false
	}
	var i int
	if _, err := fmt.Sscanf(p, "model.layers.%d.", &i); err != nil || i < 0 || i >= len(m.moe.sparse) || !m.moe.sparse[i] {
		return nil, false
	}
	d, mc, hidden := m.desc.MoE, m.moe, m.cfg.HiddenSize
	// Mixtral's block_sparse_moe is "mlp" in transformers 5's own saves
	mp := p + d.Prefix
	if !l.W.Has(mp+".gate.weight") && l.W.Has(p+"mlp.gate.weight") {
		mp = p + "mlp"
	}
	b := &moeBlock{router: l.Linear(mp+".gate", mc.experts, hidden, false)}
	names := d.Names
	if names[0] == "" {
		names = [3]string{"gate_proj", "up_proj", "down_proj"}
	}
	b.experts = l.Experts(mp+".switch_mlp.", mp+".experts.", names, mc.experts, mc.inter, hidden)
	if d.Shared {
		b.shared = true
		s := mp + ".shared_expert."
		b.sGate = l.Linear(s+"gate_proj", mc.sharedInter, hidden, false)
		b.sUp = l.Linear(s+"up_proj", mc.sharedInter, hidden, false)
		b.sDown = l.Linear(s+"down_proj", hidden, mc.sharedInter, false)
		b.sharedGate = l.Linear(mp+".shared_expert_gate", 1, hidden, false)
	}
	return b, true
}

// forward records router → top-k → gated experts → weighted sum, plus the
// shared expert scaled by sigmoid(shared_expert_gate(h)).
func (b *moeBlock) forward(g *tensor.Graph, m *Model, h tensor.T) tensor.T {
	mc := m.moe
	route := g.Route(b.router.Forward(g, h), mc.topK, tensor.RouteSoftmax, mc.norm)
	out := b.experts.Forward(g, m.act, h, route)
	if b.shared {
		n, hidden := g.Shape(h)[0], m.cfg.HiddenSize
		s := b.sDown.Forward(g, g.Mul(m.act(g, b.sGate.Forward(g, h)), b.sUp.Forward(g, h)))
		// a one-expert sigmoid route is sigmoid(gate(h)) in column 0, so
		// ExpertSum scales the shared expert by it
		sr := g.Route(b.sharedGate.Forward(g, h), 1, tensor.RouteSigmoid, false)
		out = g.Add(out, g.ExpertSum(g.Reshape(s, n, 1, hidden), sr))
	}
	return out
}
