package gemma4

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"hearth/engine/config"
)

// settings are the Gemma 4 numbers config.Config does not carry, read once
// from the text config with the defaults Gemma4TextConfig gives them.
type settings struct {
	ple       int // hidden_size_per_layer_input; 0 = no per-layer inputs
	pleVocab  int // vocab_size_per_layer_input
	shared    int // num_kv_shared_layers
	doubleMLP bool
	kEqV      bool
	finalCap  float32
	// visionBidi: use_bidirectional_attention "vision" (pictures' tokens
	// see each other on sliding layers)
	visionBidi bool
	// per layer: head size and KV heads (full-attention layers take
	// global_head_dim and, with attention_k_eq_v, num_global_key_value_heads)
	headDim, kvHeads []int
	// MoE (enable_moe_block): experts, top k, width of each
	moe                     bool
	experts, topK, moeInter int
}

// perLayer is one entry of per_layer_config (transformers 5.17 writes it;
// hub configs written earlier give global_head_dim instead).
type perLayer struct {
	HeadDim *int `json:"head_dim"`
	KVHeads *int `json:"num_key_value_heads"`
}

// readSettings reads and checks the Gemma 4 switches. A switch this port
// does not implement is an error naming it, never a silently wrong graph.
func readSettings(c *config.Config) (*settings, error) {
	f := config.NewFields(c.Text)
	s := &settings{
		ple:       f.Int("hidden_size_per_layer_input", pleDefault(c.Text)),
		pleVocab:  f.Int("vocab_size_per_layer_input", 262144),
		shared:    f.Int("num_kv_shared_layers", 0),
		doubleMLP: f.Bool("use_double_wide_mlp", false),
		kEqV:      f.Bool("attention_k_eq_v", false),
		finalCap:  float32(f.Float("final_logit_softcapping", 0)),
		moe:       f.Bool("enable_moe_block", false),
		experts:   f.Int("num_experts", 0),
		topK:      f.Int("top_k_experts", 0),
		moeInter:  f.Int("moe_intermediate_size", 0),
	}
	globalHead := f.Int("global_head_dim", 512)
	globalKV := f.Int("num_global_key_value_heads", 0)
	if err := f.Err(); err != nil {
		return nil, err
	}
	if raw, ok := c.Text["use_bidirectional_attention"]; ok && string(raw) != "null" {
		var mode string
		if err := json.Unmarshal(raw, &mode); err != nil || mode != "vision" {
			// "vision" only changes image tokens; "all" makes text attend both ways
			return nil, fmt.Errorf(`"use_bidirectional_attention" %s is not supported (null or "vision" are)`, raw)
		}
		s.visionBidi = true
	}
	n := c.NumHiddenLayers
	switch {
	case s.shared < 0 || s.shared >= n:
		return nil, fmt.Errorf(`"num_kv_shared_layers" %d must be in [0, %d)`, s.shared, n)
	case s.ple < 0:
		return nil, fmt.Errorf(`"hidden_size_per_layer_input" %d must not be negative`, s.ple)
	case s.ple > 0 && s.pleVocab < 1:
		return nil, fmt.Errorf(`"vocab_size_per_layer_input" %d must be positive`, s.pleVocab)
	case s.moe && (s.experts < 1 || s.topK < 1 || s.topK > s.experts || s.moeInter < 1):
		return nil, fmt.Errorf(`the MoE block needs "num_experts" ≥ 1, "top_k_experts" in [1, num_experts] and "moe_intermediate_size" ≥ 1 (got %d, %d, %d)`,
			s.experts, s.topK, s.moeInter)
	}
	for i, t := range c.LayerTypes {
		if t != config.Full && t != config.Sliding {
			return nil, fmt.Errorf(`"layer_types"[%d] is %q, which Gemma 4 does not have`, i, t)
		}
	}
	s.headDim, s.kvHeads = make([]int, n), make([]int, n)
	var table map[string]perLayer
	if raw, ok := c.Text["per_layer_config"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &table); err != nil {
			return nil, fmt.Errorf(`"per_layer_config": %w`, err)
		}
	}
	for i := range n {
		s.headDim[i], s.kvHeads[i] = c.HeadDim, c.NumKeyValueHeads
		if table != nil {
			if e, ok := table[strconv.Itoa(i)]; ok {
				if e.HeadDim != nil {
					s.headDim[i] = *e.HeadDim
				}
				if e.KVHeads != nil {
					s.kvHeads[i] = *e.KVHeads
				}
			}
		} else if c.LayerTypes[i] == config.Full {
			// Gemma4TextConfig.__post_init__: full layers take the global
			// head size, and the global KV heads when k_eq_v gates them
			s.headDim[i] = globalHead
			if s.kEqV && globalKV > 0 {
				s.kvHeads[i] = globalKV
			}
		}
		h, kv := s.headDim[i], s.kvHeads[i]
		if h < 2 || h%2 != 0 || h > 1<<12 || kv < 1 || c.NumAttentionHeads%kv != 0 {
			return nil, fmt.Errorf("layer %d: head_dim %d and %d KV heads do not fit %d attention heads", i, h, kv, c.NumAttentionHeads)
		}
	}
	return s, nil
}

// source is the layer whose keys and values layer i attends to: itself, or
// for the last num_kv_shared_layers layers the last earlier layer of the
// same attention type (Gemma4TextAttention's store_full_length_kv).
func (s *settings) source(c *config.Config, i int) (int, error) {
	first := c.NumHiddenLayers - s.shared
	if s.shared == 0 || i < first {
		return i, nil
	}
	for j := first - 1; j >= 0; j-- {
		if c.LayerTypes[j] == c.LayerTypes[i] {
			return j, nil
		}
	}
	return 0, fmt.Errorf("layer %d shares the keys and values of an earlier %s layer, but none of the first %d layers is one", i, c.LayerTypes[i], first)
}

// pleDefault is hidden_size_per_layer_input when the config leaves it
// out: transformers' default, 256. An explicit null is None there, which
// turns the per-layer inputs off (the 26B-A4B and 31B have none), so it
// reads as 0 here.
func pleDefault(text map[string]json.RawMessage) int {
	if v, ok := text["hidden_size_per_layer_input"]; ok && string(bytes.TrimSpace(v)) == "null" {
		return 0
	}
	return 256
}
