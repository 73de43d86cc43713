package tensor

// Linear-attention ops (Qwen 3.5's Gated DeltaNet). A recurrent layer
// carries state from one forward pass to the next in persistent buffers:
// CausalConv1d and GatedDeltaRule read the state as of the pass's first
// token from one buffer and write the state after its last token into
// another, as a Store would (the readers of the new state are the next
// pass's ops). Keeping the two apart lets a cache hold the state of earlier
// passes for rollback without copying it (cache.State), and lets a GPU run
// every channel or head without a barrier between reading and writing.

// DeltaRuleEps is the epsilon of the L2 normalisation of queries and keys
// inside GatedDeltaRule: x·rsqrt(Σx² + eps), transformers' l2norm and the
// FLA kernels' use_qk_l2norm_in_kernel.
const DeltaRuleEps = 1e-6

// Sigmoid is 1 / (1 + exp(-x)).
func (g *Graph) Sigmoid(x T) T { return g.unary(OpSigmoid, x) }

// Softplus is log(1 + exp(x)), or x itself where x > 20: torch's softplus
// with beta 1 and threshold 20.
func (g *Graph) Softplus(x T) T { return g.unary(OpSoftplus, x) }

// CausalConv1d is the depthwise causal convolution of x [n, C] over time
// with kernel w [C, K] (dense; row c is channel c's taps, oldest first),
// continuing from state [K-1, C], the inputs of the K-1 tokens before x
// (zeros at the start of a sequence). With xs = [state; x] of K-1+n rows,
//
//	y[t, c] = Σ_j w[c, j] · xs[t+j, c]   (t < n, j < K)
//
// which is transformers' causal_conv1d_fn (F.conv1d with groups = C and
// K-1 leading pads, bias-free) and causal_conv1d_update. It returns y [n, C]
// and writes the last K-1 rows of xs into next, a buffer of state's shape
// other than state. state and next are Alloc'd buffers.
func (g *Graph) CausalConv1d(x, w, state, next T) T {
	xs, ws, ss, ns := g.Shape(x), g.Shape(w), g.Shape(state), g.Shape(next)
	if len(xs) != 2 || len(ws) != 2 || ws[0] != xs[1] || ws[1] < 2 || len(ss) != 2 || ss[0] != ws[1]-1 || ss[1] != xs[1] ||
		len(ns) != 2 || ns[0] != ss[0] || ns[1] != ss[1] || state.Buffer() < 0 || next.Buffer() < 0 || state == next {
		return g.fail("causal conv1d: x %v, w %v, state %v (buffer %v), next %v (buffer %v)", xs, ws, ss, state.Buffer() >= 0, ns, next.Buffer() >= 0)
	}
	return g.add(Node{Op: OpCausalConv1d, In: []T{x, w, state, next}, Shape: clone(xs)})
}

// GatedDeltaRule is the gated delta rule of Gated DeltaNet over the n
// tokens of one pass, each token after the one before:
//
//	q, k [n, Hk, dk] are L2-normalised per head (DeltaRuleEps) and q is
//	  scaled by 1/√dk; value head h reads key head h / (Hv/Hk)
//	  (transformers' repeat_interleave)
//	v [n, Hv, dv]; decay [n, Hv] (log space, ≤ 0); beta [n, Hv]
//	S = state [Hv, dk, dv], the state before the first token, then per
//	token t and head h:
//	  S     ← S · exp(decay[t, h])
//	  delta ← (v[t, h] − Sᵀ·k) · beta[t, h]
//	  S     ← S + k ⊗ delta
//	  y[t, h] = Sᵀ·q
//
// It returns y [n, Hv, dv] and writes S after the last token into next, a
// buffer of state's shape other than state. This is transformers'
// torch_recurrent_gated_delta_rule with use_qk_l2norm_in_kernel; its
// chunked form (torch_chunk_gated_delta_rule) computes the same values
// with another rounding. state and next are Alloc'd float32 buffers.
func (g *Graph) GatedDeltaRule(q, k, v, decay, beta, state, next T) T {
	qs, ks, vs, ds, bs := g.Shape(q), g.Shape(k), g.Shape(v), g.Shape(decay), g.Shape(beta)
	ss, ns := g.Shape(state), g.Shape(next)
	ok := len(qs) == 3 && len(ks) == 3 && len(vs) == 3 && len(ds) == 2 && len(bs) == 2 && len(ss) == 3 && len(ns) == 3
	if ok {
		n, hk, dk, hv, dv := qs[0], qs[1], qs[2], vs[1], vs[2]
		ok = ks[0] == n && ks[1] == hk && ks[2] == dk && vs[0] == n && hk > 0 && hv%hk == 0 &&
			ds[0] == n && ds[1] == hv && bs[0] == n && bs[1] == hv &&
			ss[0] == hv && ss[1] == dk && ss[2] == dv && ns[0] == hv && ns[1] == dk && ns[2] == dv
	}
	if !ok || state.Buffer() < 0 || next.Buffer() < 0 || state == next {
		return g.fail("gated delta rule: q %v, k %v, v %v, decay %v, beta %v, state %v (buffer %v), next %v (buffer %v)",
			qs, ks, vs, ds, bs, ss, state.Buffer() >= 0, ns, next.Buffer() >= 0)
	}
	return g.add(Node{Op: OpGatedDeltaRule, In: []T{q, k, v, decay, beta, state, next}, Shape: clone(vs)})
}
