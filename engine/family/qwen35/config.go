// Package qwen35 runs Qwen 3.5 checkpoints (model_type qwen3_5 and
// qwen3_5_moe, and their text-only qwen3_5_text and qwen3_5_moe_text): a
// hybrid stack of Gated DeltaNet linear-attention layers and gated
// full-attention layers, with dense or mixture-of-experts feed-forward
// blocks. Transcribed from transformers 5.17's modeling_qwen3_5.py and
// modeling_qwen3_5_moe.py. Pictures (model_type qwen3_5 and qwen3_5_moe)
// come from the engine's Qwen-VL tower (engine/tower/qwenvl), spliced in
// with their multimodal rotary positions (mrope.go).
package qwen35

import (
	"encoding/json"
	"fmt"
	"slices"

	"hearth/engine/config"
	"hearth/engine/family"
)

// Family is Qwen 3.5's registry entry.
var Family = family.Family{
	Name: "qwen3_5",
	Tier: family.Targeted,
	Accepts: func(c *config.Config) bool {
		return slices.Contains(types, c.ModelType) || slices.Contains(types, c.TextModelType)
	},
	Fidelity:    "parity vs transformers 5.17 (f32 max-abs logit ≤ 1e-4, greedy ids exact)",
	Types:       func() []string { return slices.Clone(types) },
	New:         New,
	CacheLayers: cacheLayers,
	Media:       media,
}

// types are the model_type values this family runs: the multimodal
// checkpoints (text_config nested) and the text-only ones.
var types = []string{"qwen3_5", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_5_text"}

// settings are the Qwen 3.5 numbers config.Config does not carry, read
// once from the text config with the defaults Qwen3_5TextConfig and
// Qwen3_5MoeTextConfig give them.
type settings struct {
	convKernel int // linear_conv_kernel_dim
	keyDim     int // linear_key_head_dim
	valueDim   int // linear_value_head_dim
	keyHeads   int // linear_num_key_heads
	valueHeads int // linear_num_value_heads
	linear     []bool
	// MoE (qwen3_5_moe): every layer's feed-forward block is sparse
	moe                   bool
	experts, topK         int
	moeInter, sharedInter int
	partialRotary         float64 // of the full-attention heads
	mropeSection          [3]int  // rotary pairs per temporal, height, width position (mrope.go)
}

// convDim is the width of the convolution: q, k and v of the linear layers.
func (s *settings) convDim() int { return 2*s.keyHeads*s.keyDim + s.valueHeads*s.valueDim }

// isMoE reports whether c is a Qwen 3.5 MoE config.
func isMoE(c *config.Config) bool {
	return c.ModelType == "qwen3_5_moe" || c.TextModelType == "qwen3_5_moe_text"
}

// readSettings reads and checks the Qwen 3.5 switches. A switch this port
// does not implement is an error naming it, never a silently wrong graph.
func readSettings(c *config.Config) (*settings, error) {
	f := config.NewFields(c.Text)
	s := &settings{
		convKernel: f.Int("linear_conv_kernel_dim", 4),
		keyDim:     f.Int("linear_key_head_dim", 128),
		valueDim:   f.Int("linear_value_head_dim", 128),
		keyHeads:   f.Int("linear_num_key_heads", 16),
		valueHeads: f.Int("linear_num_value_heads", 32),
		moe:        isMoE(c),
	}
	if s.moe {
		s.experts = f.Int("num_experts", 256)
		s.topK = f.Int("num_experts_per_tok", 8)
		s.moeInter = f.Int("moe_intermediate_size", 512)
		s.sharedInter = f.Int("shared_expert_intermediate_size", 512)
		if step := f.Int("decoder_sparse_step", 1); step != 1 {
			return nil, fmt.Errorf(`"decoder_sparse_step" %d is not supported (Qwen 3.5 MoE makes every layer sparse)`, step)
		}
		if dense := f.Ints("mlp_only_layers"); len(dense) > 0 {
			return nil, fmt.Errorf(`"mlp_only_layers" %v is not supported (Qwen 3.5 MoE makes every layer sparse)`, dense)
		}
	}
	interval := f.Int("full_attention_interval", 4)
	if err := f.Err(); err != nil {
		return nil, err
	}
	switch {
	case s.convKernel < 2 || s.convKernel > 64:
		return nil, fmt.Errorf(`"linear_conv_kernel_dim" %d must be in [2, 64]`, s.convKernel)
	case s.keyDim < 1 || s.keyDim > 1024 || s.valueDim < 1 || s.valueDim > 1024:
		return nil, fmt.Errorf(`"linear_key_head_dim" %d and "linear_value_head_dim" %d must be in [1, 1024]`, s.keyDim, s.valueDim)
	case s.keyHeads < 1 || s.valueHeads < 1 || s.valueHeads%s.keyHeads != 0 || s.valueHeads > 1<<16:
		return nil, fmt.Errorf(`"linear_num_value_heads" %d must be a positive multiple of "linear_num_key_heads" %d, at most %d`, s.valueHeads, s.keyHeads, 1<<16)
	case s.moe && (s.experts < 1 || s.experts > 1<<16 || s.topK < 1 || s.topK > s.experts || s.moeInter < 1 || s.sharedInter < 1 || s.moeInter > 1<<20 || s.sharedInter > 1<<20):
		return nil, fmt.Errorf(`the MoE block needs "num_experts" in [1, 65536], "num_experts_per_tok" in [1, num_experts], "moe_intermediate_size" and "shared_expert_intermediate_size" in [1, 1048576] (got %d, %d, %d, %d)`,
			s.experts, s.topK, s.moeInter, s.sharedInter)
	case interval < 1:
		return nil, fmt.Errorf(`"full_attention_interval" %d must be positive`, interval)
	}
	if c.HiddenAct != "silu" && c.HiddenAct != "" { // "": the config class's default, silu
		return nil, fmt.Errorf(`"hidden_act" %q is not supported (Qwen 3.5 uses silu)`, c.HiddenAct)
	}
	// layer_types, or (configs without it) every interval-th layer full
	n := c.NumHiddenLayers
	s.linear = make([]bool, n)
	if raw, ok := c.Text["layer_types"]; ok && string(raw) != "null" {
		for i, t := range c.LayerTypes {
			if t != config.Linear && t != config.Full {
				return nil, fmt.Errorf(`"layer_types"[%d] is %q, which Qwen 3.5 does not have (%q or %q)`, i, t, config.Linear, config.Full)
			}
			s.linear[i] = t == config.Linear
		}
	} else {
		for i := range s.linear {
			s.linear[i] = (i+1)%interval != 0
		}
	}
	// Qwen3_5TextConfig defaults partial_rotary_factor to 0.25 when the
	// config gives none; config.Rope's own default is 1.
	s.partialRotary = c.Rope.PartialRotaryFactor
	_, inRope := c.Rope.Params["partial_rotary_factor"]
	_, inText := c.Text["partial_rotary_factor"]
	if !inRope && !inText {
		s.partialRotary = 0.25
	}
	if s.partialRotary <= 0 || s.partialRotary > 1 {
		return nil, fmt.Errorf(`"partial_rotary_factor" %v must be in (0, 1]`, s.partialRotary)
	}
	// mrope_section splits the rotary pairs between temporal, height and
	// width positions (interleaved, the only layout Qwen 3.5 has); a text
	// token has the same position in all three, so text rotates like plain
	// rope whatever the split
	s.mropeSection = [3]int{11, 11, 10}
	if raw, ok := c.Rope.Params["mrope_section"]; ok && string(raw) != "null" {
		var sec []int
		if err := json.Unmarshal(raw, &sec); err != nil || len(sec) != 3 || sec[0] < 0 || sec[1] < 0 || sec[2] < 0 {
			return nil, fmt.Errorf(`"mrope_section" %s must be three non-negative integers`, raw)
		}
		s.mropeSection = [3]int(sec)
	}
	return s, nil
}
