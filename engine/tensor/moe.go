package tensor

// Mixture-of-experts ops. The router's choice stays on the device: Route
// writes each row's expert ids (as exact small integers in float32) next to
// their weights, and ExpertMatMul and ExpertSum read them there, so a
// forward pass never waits for the host and each token touches only the
// weights of its own experts.

// Router scoring functions (Route's I[1]).
const (
	RouteSoftmax = iota // softmax over all experts, then top-k (Mixtral, Qwen MoE, OLMoE)
	RouteSigmoid        // sigmoid of each score, then top-k
)

// Route picks, for each row of scores [n, experts] (the router's logits),
// the k experts with the highest score after scoring (RouteSoftmax or
// RouteSigmoid), in descending order (ties: the lower id first), and gives
// [n, 2k]: columns [0, k) the chosen experts' scored values — divided by
// their sum when norm is set (norm_topk_prob) — and columns [k, 2k) their
// ids. Scores are computed in float32, as transformers does.
func (g *Graph) Route(scores T, k, scoring int, norm bool) T {
	return g.RouteScaled(scores, k, scoring, norm, T{})
}

// RouteScaled is Route whose weights are then multiplied by the chosen
// expert's entry of scale [experts] (Gemma 4's per_expert_scale, applied
// after the renormalisation); a none scale is Route.
func (g *Graph) RouteScaled(scores T, k, scoring int, norm bool, scale T) T {
	ss := g.Shape(scores)
	if len(ss) != 2 || k < 1 || k > ss[1] || (scoring != RouteSoftmax && scoring != RouteSigmoid) {
		return g.fail("route: scores %v, top %d, scoring %d", ss, k, scoring)
	}
	in := []T{scores}
	if !scale.IsNone() {
		if sc := g.Shape(scale); len(sc) != 1 || sc[0] != ss[1] {
			return g.fail("route: scores %v, expert scale %v", ss, sc)
		}
		in = append(in, scale)
	}
	flag := 0
	if norm {
		flag = 1
	}
	return g.add(Node{Op: OpRoute, In: in, Shape: []int{ss[0], 2 * k}, I: [3]int{k, scoring, flag}})
}

// ExpertMatMul multiplies, for each row t and each of its k routed experts
// (route from Route, [n, 2k]), an input row by that expert's matrix of the
// stacked weight w [experts, out, in] (dense or quantized, PyTorch Linear
// layout per expert): x is [n, in] (the same row for every expert) or
// [n, k, in] (row t, slot j for the j-th expert). The result is [n, k, out].
func (g *Graph) ExpertMatMul(x, w, route T) T {
	xs, ws, rs := g.Shape(x), g.Shape(w), g.Shape(route)
	if w.Buffer() < 0 || len(ws) != 3 || len(rs) != 2 || rs[1]%2 != 0 || len(xs) < 2 || len(xs) > 3 || xs[0] != rs[0] || last(xs) != ws[2] {
		return g.fail("expert matmul: x %v, w %v, route %v", xs, ws, rs)
	}
	k := rs[1] / 2
	if len(xs) == 3 && xs[1] != k {
		return g.fail("expert matmul: x %v has %d slots, route %v picks %d", xs, xs[1], rs, k)
	}
	return g.add(Node{Op: OpExpertMatMul, In: []T{x, w, route}, Shape: []int{xs[0], k, ws[1]}})
}

// ExpertSum is Σ_j weight[t, j] · y[t, j, :] over the k slots of each row,
// with the weights of route ([n, 2k] from Route): y [n, k, d] → [n, d].
func (g *Graph) ExpertSum(y, route T) T {
	ys, rs := g.Shape(y), g.Shape(route)
	if len(ys) != 3 || len(rs) != 2 || rs[0] != ys[0] || rs[1] != 2*ys[1] {
		return g.fail("expert sum: y %v, route %v", ys, rs)
	}
	return g.add(Node{Op: OpExpertSum, In: []T{y, route}, Shape: []int{ys[0], ys[2]}})
}
