// Package config normalizes a checkpoint's config.json (and
// generation_config.json) into one shape the engine reads: nested
// text_config merged, head_dim and rope fallbacks filled, layer types
// spelled out, EOS ids collected. It is pure: no backend, no weights.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Config is a normalized model configuration. Field names are the Hugging
// Face keys in Go case.
type Config struct {
	ModelType     string // top-level model_type ("qwen3", "gemma3", …)
	TextModelType string // text_config's model_type when nested, else ModelType
	Architectures []string
	// HasVisionConfig says the config describes a vision tower
	// (vision_config); whether the weights hold one is the checkpoint's.
	HasVisionConfig bool
	// HasAudioConfig is the same for an audio tower (audio_config).
	HasAudioConfig bool

	HiddenSize            int
	IntermediateSize      int
	NumHiddenLayers       int
	NumAttentionHeads     int
	NumKeyValueHeads      int
	HeadDim               int
	VocabSize             int
	MaxPositionEmbeddings int
	RMSNormEps            float64
	TieWordEmbeddings     bool
	AttentionBias         bool
	MLPBias               bool
	HiddenAct             string

	Rope Rope
	// SlidingRope is the rope of sliding-window layers when it differs
	// from Rope (Gemma 3's local base frequency); nil otherwise.
	SlidingRope   *Rope
	SlidingWindow int      // 0 when no layer slides
	LayerTypes    []string // per layer: "full_attention" or "sliding_attention"

	BOSTokenID  *int
	EOSTokenIDs []int
	PadTokenID  *int

	// Quantization is the raw MLX "quantization" object (nil when dense).
	Quantization json.RawMessage
	Generation   Generation

	// Text holds every key of the (text) config object, for family code
	// that reads keys this struct does not name.
	Text map[string]json.RawMessage
}

// Rope is the rotary embedding configuration, from rope_parameters
// (transformers 5) or rope_theta + rope_scaling (older checkpoints).
type Rope struct {
	Type                          string // "default", "linear", "llama3", "dynamic", "yarn", "longrope", …
	Theta                         float64
	Factor                        float64
	LowFreqFactor                 float64
	HighFreqFactor                float64
	OriginalMaxPositionEmbeddings int
	PartialRotaryFactor           float64 // 1 when every head dimension rotates
	// Params holds every key of the rope object, for variants that need
	// more (yarn's beta_fast, longrope's factor lists).
	Params map[string]json.RawMessage
}

// Generation holds the sampling defaults of generation_config.json; zero
// means "not given".
type Generation struct {
	Temperature       float64 `json:"temperature"`
	TopP              float64 `json:"top_p"`
	TopK              int     `json:"top_k"`
	MinP              float64 `json:"min_p"`
	RepetitionPenalty float64 `json:"repetition_penalty"`
	MaxNewTokens      int     `json:"max_new_tokens"`
	DoSample          *bool   `json:"do_sample"`
}

// Full, Sliding and Linear are the layer types. Linear layers (Qwen 3.5's
// Gated DeltaNet) keep a fixed-size state instead of keys and values.
const (
	Full    = "full_attention"
	Sliding = "sliding_attention"
	Linear  = "linear_attention"
)

// Parse normalizes config.json bytes and optional generation_config.json
// bytes (nil when absent).
func Parse(configJSON, generationJSON []byte) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(configJSON, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	text := top
	if tc, ok := top["text_config"]; ok && !isNull(tc) {
		var nested map[string]json.RawMessage
		if err := json.Unmarshal(tc, &nested); err != nil {
			return nil, fmt.Errorf("text_config: %w", err)
		}
		// The nested object wins; keys only at the top level (quantization,
		// tie_word_embeddings, eos_token_id) still count.
		text = make(map[string]json.RawMessage, len(top)+len(nested))
		for k, v := range top {
			if k != "text_config" && k != "vision_config" && k != "audio_config" {
				text[k] = v
			}
		}
		for k, v := range nested {
			text[k] = v
		}
	}
	c := &Config{Text: text}
	if vc, ok := top["vision_config"]; ok && !isNull(vc) {
		c.HasVisionConfig = true
	}
	if ac, ok := top["audio_config"]; ok && !isNull(ac) {
		c.HasAudioConfig = true
	}
	r := reader{m: text}
	top1 := reader{m: top}
	c.ModelType = top1.str("model_type")
	c.TextModelType = r.str("model_type")
	if c.ModelType == "" {
		return nil, errors.New(`missing "model_type"`)
	}
	top1.into("architectures", &c.Architectures)
	c.HiddenSize = r.int("hidden_size", 0)
	c.IntermediateSize = r.int("intermediate_size", 0)
	c.NumHiddenLayers = r.int("num_hidden_layers", 0)
	c.NumAttentionHeads = r.int("num_attention_heads", 0)
	c.NumKeyValueHeads = r.int("num_key_value_heads", c.NumAttentionHeads)
	c.VocabSize = r.int("vocab_size", 0)
	c.MaxPositionEmbeddings = r.int("max_position_embeddings", 0)
	c.RMSNormEps = r.float("rms_norm_eps", r.float("layer_norm_eps", 1e-6))
	c.TieWordEmbeddings = r.bool("tie_word_embeddings", top1.bool("tie_word_embeddings", false))
	c.AttentionBias = r.bool("attention_bias", false)
	c.MLPBias = r.bool("mlp_bias", false)
	// Gemma 2 and 3 keep a stale hidden_act next to the hidden_activation
	// their MLP really uses.
	c.HiddenAct = r.str("hidden_activation")
	if c.HiddenAct == "" {
		c.HiddenAct = r.str("hidden_act")
	}
	if r.err != nil {
		return nil, r.err
	}
	// The upper bounds are far past any real checkpoint (Llama 3.1 405B:
	// 126 layers, 128 heads, hidden 16384; Gemma: 262144 tokens) and keep
	// a hostile config from sizing per-layer or per-token tables by them.
	for _, k := range []struct {
		key    string
		v, max int
	}{
		{"hidden_size", c.HiddenSize, 1 << 20},
		{"num_hidden_layers", c.NumHiddenLayers, 4096},
		{"num_attention_heads", c.NumAttentionHeads, 1 << 16},
		{"vocab_size", c.VocabSize, 1 << 26},
	} {
		if k.v <= 0 || k.v > k.max {
			return nil, fmt.Errorf("%q must be a positive integer up to %d, got %d", k.key, k.max, k.v)
		}
	}
	if c.NumKeyValueHeads <= 0 || c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return nil, fmt.Errorf(`"num_key_value_heads" %d must divide "num_attention_heads" %d`, c.NumKeyValueHeads, c.NumAttentionHeads)
	}
	c.HeadDim = r.int("head_dim", 0)
	if c.HeadDim > 1<<16 {
		return nil, fmt.Errorf(`"head_dim" must be at most %d, got %d`, 1<<16, c.HeadDim)
	}
	if c.HeadDim <= 0 {
		if c.HiddenSize%c.NumAttentionHeads != 0 {
			return nil, fmt.Errorf(`no "head_dim", and "hidden_size" %d is not a multiple of "num_attention_heads" %d`, c.HiddenSize, c.NumAttentionHeads)
		}
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if err := r.err; err != nil {
		return nil, err
	}
	var err error
	if c.Rope, c.SlidingRope, err = parseRopes(text); err != nil {
		return nil, err
	}
	if err := c.layerTypes(r); err != nil {
		return nil, err
	}
	c.BOSTokenID = r.optInt("bos_token_id")
	c.PadTokenID = r.optInt("pad_token_id")
	c.EOSTokenIDs = r.ids("eos_token_id")
	if q, ok := text["quantization"]; ok && !isNull(q) {
		c.Quantization = q
	} else if q, ok := text["quantization_config"]; ok && !isNull(q) {
		c.Quantization = q
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(generationJSON) > 0 {
		if err := c.mergeGeneration(generationJSON); err != nil {
			return nil, fmt.Errorf("generation_config.json: %w", err)
		}
	}
	return c, nil
}

func (c *Config) layerTypes(r reader) error {
	window := r.int("sliding_window", 0)
	if v, ok := r.m["use_sliding_window"]; ok && string(v) == "false" {
		window = 0 // Qwen2 keeps sliding_window set but switched off
	}
	c.SlidingWindow = window
	if _, ok := r.m["layer_types"]; ok && !isNull(r.m["layer_types"]) {
		r.into("layer_types", &c.LayerTypes)
		if len(c.LayerTypes) != c.NumHiddenLayers {
			return fmt.Errorf(`"layer_types" has %d entries for %d layers`, len(c.LayerTypes), c.NumHiddenLayers)
		}
		for i, t := range c.LayerTypes {
			if t != Full && t != Sliding && t != Linear {
				return fmt.Errorf(`"layer_types"[%d] is %q (want %q, %q or %q)`, i, t, Full, Sliding, Linear)
			}
			if t == Sliding && window <= 0 {
				return fmt.Errorf(`"layer_types"[%d] is %q but "sliding_window" is not set`, i, t)
			}
		}
		return r.err
	}
	c.LayerTypes = make([]string, c.NumHiddenLayers)
	// Configs written before layer_types existed say it another way:
	// Gemma 3 makes every pattern-th layer full, Gemma 2 alternates
	// starting with a sliding layer (transformers derives the same lists).
	pattern := r.int("sliding_window_pattern", r.int("_sliding_window_pattern", 0))
	if c.TextModelType == "gemma2" {
		pattern = 2
	}
	if pattern > 0 && window > 0 {
		for i := range c.LayerTypes {
			c.LayerTypes[i] = Sliding
			if (i+1)%pattern == 0 {
				c.LayerTypes[i] = Full
			}
		}
		return r.err
	}
	first := 0
	if _, ok := r.m["use_sliding_window"]; ok {
		first = r.int("max_window_layers", 0) // Qwen2 keeps its first layers full
	}
	for i := range c.LayerTypes {
		c.LayerTypes[i] = Full
		if window > 0 && i >= first {
			c.LayerTypes[i] = Sliding
		}
	}
	return r.err
}

func (c *Config) mergeGeneration(raw []byte) error {
	if err := json.Unmarshal(raw, &c.Generation); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	r := reader{m: m}
	for _, id := range r.ids("eos_token_id") {
		if !containsInt(c.EOSTokenIDs, id) {
			c.EOSTokenIDs = append(c.EOSTokenIDs, id)
		}
	}
	if c.BOSTokenID == nil {
		c.BOSTokenID = r.optInt("bos_token_id")
	}
	return r.err
}

// QDim is the width of the query projection, heads × head_dim.
func (c *Config) QDim() int { return c.NumAttentionHeads * c.HeadDim }

// KVDim is the width of each key/value projection.
func (c *Config) KVDim() int { return c.NumKeyValueHeads * c.HeadDim }

// IsSliding reports whether layer i attends through a sliding window.
func (c *Config) IsSliding(i int) bool { return c.LayerTypes[i] == Sliding }

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}
