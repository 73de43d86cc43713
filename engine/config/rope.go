package config

import (
	"encoding/json"
	"fmt"
)

// parseRopes reads the rope of full-attention layers and, when it differs,
// the rope of sliding layers. transformers 5 nests one rope_parameters
// object per layer type; older Gemma 3 configs give rope_local_base_freq.
func parseRopes(m map[string]json.RawMessage) (Rope, *Rope, error) {
	var byType map[string]json.RawMessage
	if raw, ok := m["rope_parameters"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &byType); err == nil {
			if _, nested := byType[Full]; !nested {
				byType = nil
			}
		}
	}
	if byType != nil {
		sub := func(t string) (Rope, error) {
			flat := make(map[string]json.RawMessage, len(m))
			for k, v := range m {
				if k != "rope_parameters" && k != "rope_scaling" {
					flat[k] = v
				}
			}
			flat["rope_parameters"] = byType[t]
			rp, err := parseRope(flat)
			if err != nil {
				return rp, fmt.Errorf("rope_parameters[%q]: %w", t, err)
			}
			return rp, nil
		}
		full, err := sub(Full)
		if err != nil {
			return full, nil, err
		}
		if _, ok := byType[Sliding]; !ok {
			return full, nil, nil
		}
		sliding, err := sub(Sliding)
		return full, &sliding, err
	}
	full, err := parseRope(m)
	if err != nil {
		return full, nil, err
	}
	r := reader{m: m}
	if local := r.float("rope_local_base_freq", 0); local > 0 {
		// Gemma 3 before transformers 5: local layers use plain rope at
		// their own base; rope_scaling applies to global layers only.
		sliding := Rope{Type: "default", Theta: local, PartialRotaryFactor: full.PartialRotaryFactor, Params: map[string]json.RawMessage{}}
		return full, &sliding, r.err
	}
	return full, nil, r.err
}

// parseRope reads rope_parameters (transformers 5) or rope_theta with
// rope_scaling (older configs); the two may be mixed, newer keys winning.
func parseRope(m map[string]json.RawMessage) (Rope, error) {
	top := reader{m: m}
	rp := Rope{
		Type:                "default",
		Theta:               top.float("rope_theta", 10000),
		PartialRotaryFactor: top.float("partial_rotary_factor", 1),
		Params:              map[string]json.RawMessage{},
	}
	for _, key := range []string{"rope_scaling", "rope_parameters"} {
		raw, ok := top.raw(key)
		if !ok {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return rp, fmt.Errorf("%q is not an object: %w", key, err)
		}
		for k, v := range obj {
			rp.Params[k] = v
		}
	}
	r := reader{m: rp.Params}
	if t := r.str("rope_type"); t != "" {
		rp.Type = t
	} else if t := r.str("type"); t != "" {
		rp.Type = t
	}
	rp.Theta = r.float("rope_theta", rp.Theta)
	rp.Factor = r.float("factor", 1)
	rp.LowFreqFactor = r.float("low_freq_factor", 1)
	rp.HighFreqFactor = r.float("high_freq_factor", 4)
	// transformers' standardize_rope_params prefers a top-level
	// original_max_position_embeddings (Phi-3 keeps it there) to the rope
	// object's own.
	rp.OriginalMaxPositionEmbeddings = top.int("original_max_position_embeddings", r.int("original_max_position_embeddings", 0))
	rp.PartialRotaryFactor = r.float("partial_rotary_factor", rp.PartialRotaryFactor)
	if r.err != nil {
		return rp, fmt.Errorf("rope parameters: %w", r.err)
	}
	if top.err != nil {
		return rp, top.err
	}
	if rp.Theta <= 0 {
		return rp, fmt.Errorf(`"rope_theta" must be positive, got %v`, rp.Theta)
	}
	if rp.PartialRotaryFactor <= 0 || rp.PartialRotaryFactor > 1 {
		return rp, fmt.Errorf(`"partial_rotary_factor" must be in (0, 1], got %v`, rp.PartialRotaryFactor)
	}
	return rp, nil
}
