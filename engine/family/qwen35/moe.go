package qwen35

import (
	"fmt"
	"slices"

	"hearth/engine/nn"
	"hearth/engine/tensor"
)

// moeBlock is Qwen3_5MoeSparseMoeBlock: a softmax router over the
// experts, the top k of them renormalised to sum to 1, each a gated MLP,
// plus a shared expert scaled by sigmoid(shared_expert_gate(h)).
type moeBlock struct {
	router            nn.Linear
	gate, up          tensor.T // stacked [experts, moe_inter, hidden]; none when fused
	gateUp            tensor.T // stacked [experts, 2·moe_inter, hidden] (transformers 5)
	down              tensor.T // stacked [experts, hidden, moe_inter]
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
	switch {
	case l.W.Has(p + ".switch_mlp.gate_proj.weight"):
		sw := p + ".switch_mlp."
		b.gate = l.Weight(l.W.Linear(sw+"gate_proj"), e, inter, hidden)
		b.up = l.Weight(l.W.Linear(sw+"up_proj"), e, inter, hidden)
		b.down = l.Weight(l.W.Linear(sw+"down_proj"), e, hidden, inter)
	case l.W.Has(p + ".experts.gate_up_proj"):
		b.gateUp = l.Weight(l.W.Tensor(p+".experts.gate_up_proj"), e, 2*inter, hidden)
		b.down = l.Weight(l.W.Tensor(p+".experts.down_proj"), e, hidden, inter)
	default:
		ex := p + ".experts."
		b.gate = l.Weight(stackExperts(l, ex, "gate_proj", e), e, inter, hidden)
		b.up = l.Weight(stackExperts(l, ex, "up_proj", e), e, inter, hidden)
		b.down = l.Weight(stackExperts(l, ex, "down_proj", e), e, hidden, inter)
	}
	sh := p + ".shared_expert."
	b.sGate = l.Linear(sh+"gate_proj", s.sharedInter, hidden, false)
	b.sUp = l.Linear(sh+"up_proj", s.sharedInter, hidden, false)
	b.sDown = l.Linear(sh+"down_proj", hidden, s.sharedInter, false)
	b.sharedGate = l.Linear(p+".shared_expert_gate", 1, hidden, false)
	return b
}

// stackExperts reads prefix{e}.name for every expert e (dense or
// quantized, all alike) into one [experts, out, in] weight, in the weight
// set's own memory. (universal's stack does the same for the generic tier.)
func stackExperts(l *nn.Loader, prefix, name string, experts int) tensor.Weight {
	parts := make([]tensor.Weight, experts)
	for e := range parts {
		w := l.W.Linear(fmt.Sprintf("%s%d.%s", prefix, e, name))
		if w.Data == nil {
			return tensor.Weight{}
		}
		if w0 := parts[0]; e > 0 && (!slices.Equal(w.Shape, w0.Shape) || w.DType != w0.DType || (w.Quant == nil) != (w0.Quant == nil) ||
			(w.Quant != nil && (*w.Quant != *w0.Quant || w.ScaleDType != w0.ScaleDType))) {
			l.Fail(fmt.Errorf("expert %d of %s%s differs from expert 0 in shape, dtype or quantization", e, prefix, name))
			return tensor.Weight{}
		}
		parts[e] = w
	}
	w0 := parts[0]
	nd, ns := len(w0.Data), len(w0.Scales)
	mem, err := l.W.Alloc(experts * (nd + 2*ns))
	if err != nil {
		l.Fail(fmt.Errorf("stack %s*.%s: %w", prefix, name, err))
		return tensor.Weight{}
	}
	out := tensor.Weight{Name: prefix + "*." + name, DType: w0.DType, Shape: append([]int{experts}, w0.Shape...),
		Quant: w0.Quant, ScaleDType: w0.ScaleDType}
	out.Data, mem = mem[:experts*nd:experts*nd], mem[experts*nd:]
	if ns > 0 {
		out.Scales, out.Biases = mem[:experts*ns:experts*ns], mem[experts*ns:]
	}
	for e, w := range parts {
		copy(out.Data[e*nd:], w.Data)
		copy(out.Scales[e*ns:], w.Scales)
		copy(out.Biases[e*ns:], w.Biases)
	}
	return out
}

// forward records router → top-k → gated experts → weighted sum, plus the
// shared expert scaled by sigmoid(shared_expert_gate(h)).
func (b *moeBlock) forward(g *tensor.Graph, m *Model, h tensor.T) tensor.T {
	s := m.s
	route := g.Route(b.router.Forward(g, h), s.topK, tensor.RouteSoftmax, true)
	var gate, up tensor.T
	if !b.gateUp.IsNone() {
		gu := g.ExpertMatMul(h, b.gateUp, route)
		gate, up = g.Slice(gu, -1, 0, s.moeInter), g.Slice(gu, -1, s.moeInter, 2*s.moeInter)
	} else {
		gate, up = g.ExpertMatMul(h, b.gate, route), g.ExpertMatMul(h, b.up, route)
	}
	out := g.ExpertSum(g.ExpertMatMul(g.Mul(g.SiLU(gate), up), b.down, route), route)
	n, hidden := g.Shape(h)[0], m.cfg.HiddenSize
	shared := b.sDown.Forward(g, g.Mul(g.SiLU(b.sGate.Forward(g, h)), b.sUp.Forward(g, h)))
	// a one-expert sigmoid route is sigmoid(gate(h)) in column 0, so
	// ExpertSum scales the shared expert by it
	sr := g.Route(b.sharedGate.Forward(g, h), 1, tensor.RouteSigmoid, false)
	return g.Add(out, g.ExpertSum(g.Reshape(shared, n, 1, hidden), sr))
}
