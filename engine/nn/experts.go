package nn

import (
	"fmt"
	"slices"

	"hearth/engine/tensor"
)

// Experts is a mixture-of-experts block's stacked gated MLPs: each routed
// slot runs down(act(gate(x)) · up(x)) with its own expert's matrices.
type Experts struct {
	Gate, Up tensor.T // [experts, inter, hidden]; none when fused
	GateUp   tensor.T // [experts, 2·inter, hidden] (transformers 5's fused parameter)
	Down     tensor.T // [experts, hidden, inter]
	Inter    int
}

// Experts binds a block's experts from whichever of the three layouts the
// checkpoint has: mlx-lm's stacked sw+"{gate,up,down}_proj" (dense or
// MLX-quantized), transformers 5's fused ex+"gate_up_proj" and
// ex+"down_proj", or one module per expert, ex+"{e}."+names[i] (stacked
// here). names are the per-expert gate, up and down module names.
func (l *Loader) Experts(sw, ex string, names [3]string, experts, inter, hidden int) Experts {
	e := Experts{Inter: inter}
	switch {
	case l.W.Has(sw + "gate_proj.weight"):
		e.Gate = l.Weight(l.W.Linear(sw+"gate_proj"), experts, inter, hidden)
		e.Up = l.Weight(l.W.Linear(sw+"up_proj"), experts, inter, hidden)
		e.Down = l.Weight(l.W.Linear(sw+"down_proj"), experts, hidden, inter)
	case l.W.Has(ex + "gate_up_proj"):
		e.GateUp = l.Weight(l.W.Tensor(ex+"gate_up_proj"), experts, 2*inter, hidden)
		e.Down = l.Weight(l.W.Tensor(ex+"down_proj"), experts, hidden, inter)
	default:
		e.Gate = l.Weight(l.stack(ex, names[0], experts), experts, inter, hidden)
		e.Up = l.Weight(l.stack(ex, names[1], experts), experts, inter, hidden)
		e.Down = l.Weight(l.stack(ex, names[2], experts), experts, hidden, inter)
	}
	return e
}

// Forward runs every routed slot of h (route from tensor.Graph.Route) and
// sums the slots by their route weights: [n, hidden] → [n, hidden].
func (e Experts) Forward(g *tensor.Graph, act func(*tensor.Graph, tensor.T) tensor.T, h, route tensor.T) tensor.T {
	var gate, up tensor.T
	if !e.GateUp.IsNone() {
		gu := g.ExpertMatMul(h, e.GateUp, route)
		gate, up = g.Slice(gu, -1, 0, e.Inter), g.Slice(gu, -1, e.Inter, 2*e.Inter)
	} else {
		gate, up = g.ExpertMatMul(h, e.Gate, route), g.ExpertMatMul(h, e.Up, route)
	}
	return g.ExpertSum(g.ExpertMatMul(g.Mul(act(g, gate), up), e.Down, route), route)
}

// stack reads prefix{e}.name for every expert e (dense or quantized, all
// alike) and joins them into one [experts, out, in] weight. Every tensor is
// bound, so the audit stays exact; a missing one is reported by the Binder.
// The joined bytes live in the weight set's own memory (Binder.Alloc), off
// the Go heap, so a CPU backend that keeps them costs the model's size once,
// and a GPU backend's copy frees them with the set after load.
func (l *Loader) stack(prefix, name string, experts int) tensor.Weight {
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
