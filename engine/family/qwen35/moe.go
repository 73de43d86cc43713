package qwen35

import (
	"hearth/engine/nn"
	"hearth/engine/tensor"
)

// moeBlock is Qwen3_5MoeSparseMoeBlock: a softmax router over the
// experts, the top k of them renormalised to sum to 1, each a gated MLP,
// plus a shared expert scaled by sigmoid(shared_expert_gate(h)).
type moeBlock struct {
	router            nn.Linear
	experts           nn.Experts
	sGate, sUp, sDown nn.Linear
	sharedGate        nn.Linear // [1, hidden]
}

// bindMoE binds the block at p ("….layers.N.mlp") in any of the three
// layouts checkpoints use: mlx-lm's stacked switch_mlp, transformers 5's
// fused experts.gate_up_proj, or one module per expert.
func (m *Model) bindMoE(l *nn.Loader, p string) *moeBlock {
	s, hidden := m.s, m.cfg.HiddenSize
	e, inter := s.experts, s.moeInter
	b := &moeBlock{router: l.Linear(p+".gate", e, hidden, false)}
	b.experts = l.Experts(p+".switch_mlp.", p+".experts.", [3]string{"gate_proj", "up_proj", "down_proj"}, e, inter, hidden)
	sh := p + ".shared_expert."
	b.sGate = l.Linear(sh+"gate_proj", s.sharedInter, hidden, false)
	b.sUp = l.Linear(sh+"up_proj", s.sharedInter, hidden, false)
	b.sDown = l.Linear(sh+"down_proj", hidden, s.sharedInter, false)
	b.sharedGate = l.Linear(p+".shared_expert_gate", 1, hidden, false)
	return b
}

// forward records router → top-k → gated experts → weighted sum, plus the
// shared expert scaled by sigmoid(shared_expert_gate(h)).
func (b *moeBlock) forward(g *tensor.Graph, m *Model, h tensor.T) tensor.T {
	s := m.s
	route := g.Route(b.router.Forward(g, h), s.topK, tensor.RouteSoftmax, true)
	out := b.experts.Forward(g, (*tensor.Graph).SiLU, h, route)
	n, hidden := g.Shape(h)[0], m.cfg.HiddenSize
	shared := b.sDown.Forward(g, g.Mul(g.SiLU(b.sGate.Forward(g, h)), b.sUp.Forward(g, h)))
	// a one-expert sigmoid route is sigmoid(gate(h)) in column 0, so
	// ExpertSum scales the shared expert by it
	sr := g.Route(b.sharedGate.Forward(g, h), 1, tensor.RouteSigmoid, false)
	return g.Add(out, g.ExpertSum(g.Reshape(shared, n, 1, hidden), sr))
}
