package qwen35

import (
	"hearth/engine/config"
	"hearth/engine/fit"
)

// cacheLayers is what NewCaches allocates, layer by layer: a KV cache for
// each full-attention layer, and for each DeltaNet layer a fixed state, the
// conv and recurrent states in keep+1 slots (cache.State), float32.
func cacheLayers(c *config.Config) ([]fit.Layer, error) {
	s, err := readSettings(c)
	if err != nil {
		return nil, err
	}
	out := make([]fit.Layer, c.NumHiddenLayers)
	for i := range out {
		if s.linear[i] {
			out[i] = fit.Layer{Kind: fit.Recurrent, StateBytes: stateBytes(s)}
		} else {
			out[i] = fit.Layer{Kind: fit.Full, KVHeads: c.NumKeyValueHeads, HeadDim: c.HeadDim}
		}
	}
	return out, nil
}

// stateBytes is one DeltaNet layer's cache.State.
func stateBytes(s *settings) int64 {
	conv := int64(s.convKernel-1) * int64(s.convDim())
	rec := int64(s.valueHeads) * int64(s.keyDim) * int64(s.valueDim)
	return (keep + 1) * 4 * (conv + rec)
}

// ParamCount counts the parameters of the tensors New binds for c (the
// text decoder: no vision tower, no multi-token-prediction head): in all,
// and those one token's pass reads (one row of the embedding table, k of
// the routed experts).
func ParamCount(c *config.Config) (total, active int64, err error) {
	s, err := readSettings(c)
	if err != nil {
		return 0, 0, err
	}
	h, v := int64(c.HiddenSize), int64(c.VocabSize)
	total = v * h // embed_tokens
	if !c.TieWordEmbeddings {
		total += v * h
	}
	total += h // norm
	active = total - v*h + h
	bias := int64(0)
	if c.AttentionBias {
		bias = 1
	}
	q, kv, hd := int64(c.QDim()), int64(c.KVDim()), int64(c.HeadDim)
	attn := h*2*q + 2*h*kv + q*h + bias*(2*q+2*kv+h) + 2*hd
	vd := int64(s.valueHeads * s.valueDim)
	hv, conv := int64(s.valueHeads), int64(s.convDim())
	linear := h*conv + h*vd + 2*h*hv + vd*h + conv*int64(s.convKernel) + 2*hv + int64(s.valueDim)
	var mlp, mlpActive int64
	if s.moe {
		e, k, mi, si := int64(s.experts), int64(s.topK), int64(s.moeInter), int64(s.sharedInter)
		shared := 3*h*si + h + e*h // shared expert, its gate, the router
		mlp = e*3*h*mi + shared
		mlpActive = k*3*h*mi + shared
	} else {
		mlp = 3 * h * int64(c.IntermediateSize)
		mlpActive = mlp
	}
	for _, lin := range s.linear {
		mix := attn
		if lin {
			mix = linear
		}
		total += mix + mlp + 2*h
		active += mix + mlpActive + 2*h
	}
	return total, active, nil
}
