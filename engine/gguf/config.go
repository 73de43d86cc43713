package gguf

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
)

// arch is how one general.architecture maps onto a Hugging Face
// model_type, and what llama.cpp's converter (convert_hf_to_gguf.py) did to
// that architecture's tensors on the way in, for Hearth to undo.
type arch struct {
	modelType string // config.json's model_type: the family that runs it
	class     string // config.json's architectures[0]
	act       string // hidden_act (or Gemma's hidden_activation)
	// permuteQK: LlamaModel.modify_tensors passed q_proj and k_proj
	// through LlamaModel.permute, for llama.cpp's rope on adjacent pairs.
	permuteQK bool
	// normShift: GemmaModel, Gemma2Model and Gemma3Model.modify_tensors
	// stored every *norm.weight as weight + 1 (llama.cpp's graph scales
	// by the stored weight; transformers' by 1 + weight).
	normShift bool
	// layer maps the per-layer tensor names (gguf-py's MODEL_TENSOR
	// strings, "blk.N." dropped) onto transformers' ("model.layers.N."
	// dropped).
	layer map[string]string
	// config adds the architecture's own keys to c.
	config func(m *meta, c map[string]any) error
	// moe: the feed-forward blocks are mixtures of experts.
	moe *moeArch
}

// moeArch is how an architecture's {arch}.expert_* keys and stacked
// expert tensors become transformers' config.
type moeArch struct {
	expertsKey string // config key of the expert count
	interKey   string // config key of an expert's width; "": feed_forward_length
	shared     bool   // Qwen2-MoE's shared expert (ffn_*_shexp, ffn_gate_inp_shexp)
	// denseLayers: a layer without ffn_gate_inp has a dense MLP, listed in
	// mlp_only_layers (transformers' Qwen MoE configs).
	denseLayers bool
	// normTopK is the norm_w llama.cpp's graph passes build_moe_ffn for
	// the architecture (a constant there, not a key): whether the top-k
	// router weights are renormalised to sum to 1.
	normTopK bool
}

// llamaLayer is gguf-py's tensor_mapping for the pre-norm decoder.
var llamaLayer = map[string]string{
	"attn_norm":   "input_layernorm",
	"attn_q":      "self_attn.q_proj",
	"attn_k":      "self_attn.k_proj",
	"attn_v":      "self_attn.v_proj",
	"attn_output": "self_attn.o_proj",
	"attn_q_norm": "self_attn.q_norm",
	"attn_k_norm": "self_attn.k_norm",
	"ffn_norm":    "post_attention_layernorm",
	"ffn_gate":    "mlp.gate_proj",
	"ffn_up":      "mlp.up_proj",
	"ffn_down":    "mlp.down_proj",
}

// sandwichLayer is Gemma 2 and 3's: their post_attention_layernorm is
// MODEL_TENSOR.ATTN_POST_NORM, and ffn_norm is FFN_PRE_NORM.
var sandwichLayer = with(llamaLayer, map[string]string{
	"ffn_norm":            "pre_feedforward_layernorm",
	"post_attention_norm": "post_attention_layernorm",
	"post_ffw_norm":       "post_feedforward_layernorm",
})

// moeLayer adds the expert tensors llama.cpp's converters write
// (Qwen2MoeModel, OlmoeModel and LlamaModel for Mixtral stack the experts
// into one 3-D tensor each: MODEL_TENSOR.FFN_GATE_EXP, FFN_UP_EXP,
// FFN_DOWN_EXP, [n_expert, n_ff, n_embd] outermost first). Hearth's MoE
// families bind stacked experts as mlx-lm's switch_mlp, and the router as
// "mlp.gate" (transformers 5 names Mixtral's block_sparse_moe "mlp" too).
var moeLayer = with(llamaLayer, map[string]string{
	"ffn_gate_inp":       "mlp.gate",
	"ffn_gate_exps":      "mlp.switch_mlp.gate_proj",
	"ffn_up_exps":        "mlp.switch_mlp.up_proj",
	"ffn_down_exps":      "mlp.switch_mlp.down_proj",
	"ffn_gate_shexp":     "mlp.shared_expert.gate_proj",
	"ffn_up_shexp":       "mlp.shared_expert.up_proj",
	"ffn_down_shexp":     "mlp.shared_expert.down_proj",
	"ffn_gate_inp_shexp": "mlp.shared_expert_gate",
})

// olmo2Layer: OLMo 2 has no pre-norms; its post_attention_layernorm is
// MODEL_TENSOR.ATTN_POST_NORM (OLMO2 lists no FFN_NORM in gguf-py).
var olmo2Layer = with(llamaLayer, map[string]string{
	"post_attention_norm": "post_attention_layernorm",
	"post_ffw_norm":       "post_feedforward_layernorm",
})

// glm4Layer: GLM-4's post_self_attn_layernorm is ATTN_POST_NORM, its
// post_attention_layernorm (before the MLP) FFN_NORM, post_mlp_layernorm
// FFN_POST_NORM, and gate_up_proj (gate first) FFN_UP.
var glm4Layer = with(llamaLayer, map[string]string{
	"post_attention_norm": "post_self_attn_layernorm",
	"ffn_norm":            "post_attention_layernorm",
	"post_ffw_norm":       "post_mlp_layernorm",
	"ffn_up":              "mlp.gate_up_proj",
})

// starcoder2Layer: StarCoder2's plain MLP is c_fc (FFN_UP) and c_proj
// (FFN_DOWN); its LayerNorms carry .bias beside .weight.
var starcoder2Layer = with(llamaLayer, map[string]string{
	"ffn_up":   "mlp.c_fc",
	"ffn_down": "mlp.c_proj",
})

func with(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// archs are the architectures Hearth loads from GGUF. Mistral's
// checkpoints are converted as "llama" (convert_hf_to_gguf.py registers
// MistralForCausalLM under LlamaModel), without their sliding window,
// which llama.cpp ignores too.
var archs = map[string]arch{
	"llama":  {modelType: "llama", class: "LlamaForCausalLM", act: "silu", permuteQK: true, layer: llamaLayer, config: llamaConfig},
	"qwen2":  {modelType: "qwen2", class: "Qwen2ForCausalLM", act: "silu", layer: llamaLayer},
	"qwen3":  {modelType: "qwen3", class: "Qwen3ForCausalLM", act: "silu", layer: llamaLayer},
	"gemma":  {modelType: "gemma", class: "GemmaForCausalLM", act: "gelu_pytorch_tanh", normShift: true, layer: llamaLayer},
	"gemma2": {modelType: "gemma2", class: "Gemma2ForCausalLM", act: "gelu_pytorch_tanh", normShift: true, layer: sandwichLayer, config: gemma2Config},
	"gemma3": {modelType: "gemma3_text", class: "Gemma3ForCausalLM", act: "gelu_pytorch_tanh", normShift: true, layer: sandwichLayer, config: gemma3Config},
	"phi3":   {modelType: "phi3", class: "Phi3ForCausalLM", act: "silu", layer: phi3Layer, config: phi3Config},
	// Qwen2MoeModel; Qwen3MoeModel is Qwen2MoeModel with another arch
	"qwen2moe": {modelType: "qwen2_moe", class: "Qwen2MoeForCausalLM", act: "silu", layer: moeLayer,
		moe: &moeArch{expertsKey: "num_experts", interKey: "moe_intermediate_size", shared: true, denseLayers: true}},
	"qwen3moe": {modelType: "qwen3_moe", class: "Qwen3MoeForCausalLM", act: "silu", layer: moeLayer,
		moe: &moeArch{expertsKey: "num_experts", interKey: "moe_intermediate_size", denseLayers: true, normTopK: true}},
	"olmoe": {modelType: "olmoe", class: "OlmoeForCausalLM", act: "silu", layer: moeLayer, moe: &moeArch{expertsKey: "num_experts"}},
	"olmo2": {modelType: "olmo2", class: "Olmo2ForCausalLM", act: "silu", layer: olmo2Layer},
	"glm4":  {modelType: "glm4", class: "Glm4ForCausalLM", act: "silu", layer: glm4Layer, config: glm4Config},
	"starcoder2": {modelType: "starcoder2", class: "Starcoder2ForCausalLM", act: "gelu_pytorch_tanh", layer: starcoder2Layer,
		config: starcoder2Config},
	// GraniteModel and SmolLM3Model are LlamaModel's subclasses: Q/K permuted
	"granite": {modelType: "granite", class: "GraniteForCausalLM", act: "silu", permuteQK: true, layer: llamaLayer, config: graniteConfig},
	"smollm3": {modelType: "smollm3", class: "SmolLM3ForCausalLM", act: "silu", permuteQK: true, layer: llamaLayer, config: smollm3Config},
}

// mixtral is how a "llama" file with {arch}.expert_count reads: LlamaModel
// converts MixtralForCausalLM under arch "llama" (Q/K permuted, experts
// stacked), and llama.cpp's llama graph renormalises the top-k weights.
var mixtral = arch{modelType: "mixtral", class: "MixtralForCausalLM", act: "silu", permuteQK: true, layer: moeLayer,
	config: llamaConfig, moe: &moeArch{expertsKey: "num_local_experts", normTopK: true}}

// phi3Layer: Phi-3's fused projections are MODEL_TENSOR.ATTN_QKV and
// FFN_UP (gate and up in one, gate first, as transformers keeps them).
var phi3Layer = with(llamaLayer, map[string]string{
	"attn_qkv": "self_attn.qkv_proj",
	"ffn_up":   "mlp.gate_up_proj",
})

// Architectures lists the general.architecture values Hearth loads.
func Architectures() []string {
	out := make([]string, 0, len(archs))
	for a := range archs {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// ErrUnsupportedArch is wrapped by the error of a file whose
// general.architecture Hearth has no mapping for.
var ErrUnsupportedArch = errors.New("GGUF architecture not supported")

// meta reads the {arch}.* keys of a model, keeping the first error (which
// names the key) so the config reads as a list of fields.
type meta struct {
	m    *Model
	f    *File
	arch string
	err  error
}

func (m *meta) fail(format string, args ...any) {
	if m.err == nil {
		m.err = fmt.Errorf(format, args...)
	}
}

func (m *meta) key(k string) string { return m.arch + "." + k }

// has reports whether the file has the (full) key.
func (m *meta) has(key string) bool {
	_, ok := m.f.Get(key)
	return ok
}

// uint reads {arch}.k as a positive integer; an array (a per-layer value)
// is accepted when every layer has the same one. def < 0: required.
func (m *meta) uint(k string, def int) int {
	key := m.key(k)
	v, ok := m.f.Get(key)
	if !ok {
		if def < 0 {
			m.fail("%s: missing", key)
		}
		return def
	}
	var xs []uint64
	switch x := v.V.(type) {
	case uint64:
		xs = []uint64{x}
	case int64:
		if x >= 0 {
			xs = []uint64{uint64(x)}
		}
	case []uint64:
		xs = x
	case []int64:
		for _, y := range x {
			if y < 0 {
				xs = nil
				break
			}
			xs = append(xs, uint64(y))
		}
	}
	if len(xs) == 0 {
		m.fail("%s: %v (%s) is not a non-negative integer", key, v.V, v.Type)
		return def
	}
	for _, x := range xs[1:] {
		if x != xs[0] {
			m.fail("%s: differs between layers (%v); Hearth runs models whose layers have one value", key, xs)
			return def
		}
	}
	if xs[0] > 1<<30 {
		m.fail("%s: %d is out of range", key, xs[0])
		return def
	}
	return int(xs[0])
}

// float reads {arch}.k as a number.
func (m *meta) float(k string, def float64) float64 {
	key := m.key(k)
	if _, ok := m.f.Get(key); !ok {
		return def
	}
	x, ok := m.f.Float(key)
	if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
		v, _ := m.f.Get(key)
		m.fail("%s: %v (%s) is not a finite number", key, v.V, v.Type)
		return def
	}
	return x
}

// tensor returns the model's tensor named name.
func (m *Model) tensor(name string) (TensorInfo, bool) {
	for _, t := range m.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return TensorInfo{}, false
}

// hfConfig synthesizes the config.json transformers would have for the
// model, from general.architecture and the {arch}.* keys llama.cpp's
// converter writes (TextModel.set_gguf_parameters and the architecture's
// own), read the way llama.cpp's llama_model::load_hparams reads them.
func (m *Model) hfConfig() (arch, []byte, error) {
	f := m.Meta()
	name, ok := f.String("general.architecture")
	if !ok {
		return arch{}, nil, fmt.Errorf("%w: general.architecture: missing (not a model file?)", ErrFormat)
	}
	a, ok := archs[name]
	if !ok {
		return arch{}, nil, fmt.Errorf("%w: general.architecture %q (supported: %s)", ErrUnsupportedArch, name, strings.Join(Architectures(), ", "))
	}
	md := &meta{m: m, f: f, arch: name}
	if name == "llama" && md.uint("expert_count", 0) > 0 {
		a = mixtral
	}
	hidden := md.uint("embedding_length", -1)
	heads := md.uint("attention.head_count", -1)
	c := map[string]any{
		"model_type":          a.modelType,
		"architectures":       []string{a.class},
		"hidden_size":         hidden,
		"intermediate_size":   md.uint("feed_forward_length", -1),
		"num_hidden_layers":   md.uint("block_count", -1),
		"num_attention_heads": heads,
		// llama.cpp's default when the key is absent: one KV head per head
		"num_key_value_heads":     md.uint("attention.head_count_kv", heads),
		"max_position_embeddings": md.uint("context_length", -1),
		"rms_norm_eps":            md.float("attention.layer_norm_rms_epsilon", 1e-5),
		"hidden_act":              a.act,
		"hidden_activation":       a.act,
		"rope_theta":              md.float("rope.freq_base", 10000),
	}
	if md.err != nil {
		return a, nil, md.err
	}
	if heads == 0 {
		return a, nil, fmt.Errorf("%s: 0", md.key("attention.head_count"))
	}
	headDim := hidden / heads
	if k := md.uint("attention.key_length", 0); k > 0 {
		if v := md.uint("attention.value_length", k); v != k {
			return a, nil, fmt.Errorf("%s %d and %s %d differ; Hearth runs models whose keys and values have one head size", md.key("attention.key_length"), k, md.key("attention.value_length"), v)
		}
		headDim = k
	}
	c["head_dim"] = headDim
	emb, ok := m.tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return a, nil, fmt.Errorf("tensor \"token_embd.weight\": missing or not a matrix (the token embedding every architecture has)")
	}
	c["vocab_size"] = int(emb.Dims[1])
	_, hasOutput := m.tensor("output.weight")
	c["tie_word_embeddings"] = !hasOutput
	tokenIDs(f, c)
	if err := m.rope(md, c, headDim); err != nil {
		return a, nil, err
	}
	if a.config != nil {
		if err := a.config(md, c); err != nil {
			return a, nil, err
		}
	}
	if a.moe != nil {
		if err := a.moe.config(md, c); err != nil {
			return a, nil, err
		}
	}
	if md.err != nil {
		return a, nil, md.err
	}
	raw, err := json.Marshal(c)
	return a, raw, err
}

// tokenIDs copies the special token ids of tokenizer.ggml.* into the
// config: eos_token_id lists EOS and, where the file names them, the
// end-of-turn and end-of-message tokens llama.cpp also stops at.
func tokenIDs(f *File, c map[string]any) {
	if id, ok := f.Uint("tokenizer.ggml.bos_token_id"); ok {
		c["bos_token_id"] = id
	}
	if id, ok := f.Uint("tokenizer.ggml.padding_token_id"); ok {
		c["pad_token_id"] = id
	}
	var eos []uint64
	for _, k := range []string{"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		if id, ok := f.Uint(k); ok && !slices.Contains(eos, id) {
			eos = append(eos, id)
		}
	}
	if len(eos) > 0 {
		c["eos_token_id"] = eos
	}
}

// rope writes the rotary embedding: rope.freq_base, rope.dimension_count
// (a partial rotary factor when it is less than the head), the scaling
// type and factor, and the per-frequency factors llama.cpp's converter
// stores as the rope_freqs tensor for Llama 3's scaling
// (LlamaModel.generate_extra_tensors). llama.cpp divides each frequency
// by its factor; so does transformers' LongRoPE with equal short and long
// factors and an attention factor of 1, which is what the config says.
func (m *Model) rope(md *meta, c map[string]any, headDim int) error {
	params := map[string]any{"rope_type": "default", "rope_theta": c["rope_theta"]}
	if dims := md.uint("rope.dimension_count", headDim); dims != headDim {
		if dims <= 0 || dims > headDim || dims%2 != 0 {
			return fmt.Errorf("%s: %d rotary dimensions for a head of %d", md.key("rope.dimension_count"), dims, headDim)
		}
		c["partial_rotary_factor"] = float64(dims) / float64(headDim)
	}
	typ, _ := md.f.String(md.key("rope.scaling.type"))
	factor := md.float("rope.scaling.factor", 0)
	if f := md.float("rope.scale_linear", 0); f > 0 && typ == "" { // the key before rope.scaling.*
		typ, factor = "linear", f
	}
	switch typ {
	case "", "none":
	case "linear":
		if factor <= 0 {
			return fmt.Errorf("%s: linear scaling needs a positive %s", md.key("rope.scaling.type"), md.key("rope.scaling.factor"))
		}
		if factor != 1 {
			params["rope_type"], params["factor"] = "linear", factor
		}
	case "yarn":
		orig := md.uint("rope.scaling.original_context_length", -1)
		params["rope_type"], params["factor"], params["original_max_position_embeddings"] = "yarn", factor, orig
		if b := md.float("rope.scaling.yarn_beta_fast", 0); b > 0 {
			params["beta_fast"] = b
		}
		if b := md.float("rope.scaling.yarn_beta_slow", 0); b > 0 {
			params["beta_slow"] = b
		}
	default:
		return fmt.Errorf("%s: %q is not a rope scaling Hearth reads from GGUF (none, linear, yarn)", md.key("rope.scaling.type"), typ)
	}
	long, hasLong := m.tensor("rope_factors_long.weight")
	short, hasShort := m.tensor("rope_factors_short.weight")
	if hasLong || hasShort {
		// Phi3MiniModel.generate_extra_tensors: LongRoPE's factors, with
		// the original context and the attention factor as keys.
		if !hasLong || !hasShort || params["rope_type"] != "default" {
			return fmt.Errorf("tensors \"rope_factors_long.weight\" and \"rope_factors_short.weight\" come as a pair, without another rope scaling")
		}
		lf, err := m.ropeFactors(long, headDim)
		if err != nil {
			return err
		}
		sf, err := m.ropeFactors(short, headDim)
		if err != nil {
			return err
		}
		params = map[string]any{
			"rope_type": "longrope", "rope_theta": c["rope_theta"], "short_factor": sf, "long_factor": lf,
			"original_max_position_embeddings": md.uint("rope.scaling.original_context_length", -1),
		}
		if a := md.float("rope.scaling.attn_factor", 0); a > 0 {
			params["attention_factor"] = a
		}
	}
	if t, ok := m.tensor("rope_freqs.weight"); ok {
		factors, err := m.ropeFactors(t, headDim)
		if err != nil {
			return err
		}
		if params["rope_type"] == "yarn" {
			return fmt.Errorf("tensor \"rope_freqs.weight\" with yarn scaling: Hearth does not combine the two")
		}
		if f, ok := params["factor"].(float64); ok { // linear on top: every frequency divided once more
			for i := range factors {
				factors[i] *= f
			}
		}
		ctx := c["max_position_embeddings"]
		params = map[string]any{
			"rope_type": "longrope", "rope_theta": c["rope_theta"],
			"short_factor": factors, "long_factor": factors,
			"attention_factor": 1.0, "original_max_position_embeddings": ctx,
		}
	}
	if p, ok := c["partial_rotary_factor"]; ok {
		params["partial_rotary_factor"] = p
	}
	c["rope_parameters"] = params
	return nil
}

// ropeFactors reads a tensor of rope factors (rope_freqs,
// rope_factors_long, rope_factors_short): one F32 factor per rotary
// frequency.
func (m *Model) ropeFactors(t TensorInfo, headDim int) ([]float64, error) {
	if t.Type != F32 || len(t.Dims) != 1 || t.Dims[0] > uint64(headDim/2) {
		return nil, fmt.Errorf("tensor %q: %s %v, want F32 with a factor per rotary frequency (at most %d)", t.Name, t.Type, t.Dims, headDim/2)
	}
	raw, err := m.readTensor(t)
	if err != nil {
		return nil, err
	}
	out := make([]float64, t.Dims[0])
	for i := range out {
		v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("tensor %q: factor %d is %v, not a positive number", t.Name, i, v)
		}
		out[i] = float64(v)
	}
	return out, nil
}

// readTensor reads a (small) tensor's bytes from its file.
func (m *Model) readTensor(t TensorInfo) ([]byte, error) {
	fh, err := os.Open(m.Paths[t.File])
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	buf := make([]byte, t.Size)
	if _, err := fh.ReadAt(buf, t.Offset); err != nil && err != io.EOF {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return buf, nil
}

// phi3Config: a sliding window on every layer where the file gives one
// (Phi3MiniModel writes 0 for none; llama.cpp's set_swa_pattern(1)).
func phi3Config(md *meta, c map[string]any) error {
	if w := md.uint("attention.sliding_window", 0); w > 0 {
		types := make([]string, c["num_hidden_layers"].(int))
		for i := range types {
			types[i] = "sliding_attention"
		}
		c["sliding_window"], c["layer_types"] = w, types
	}
	return nil
}

// llamaConfig: biases where the file has them (HF's attention_bias puts
// one on q, k, v and o; mlp_bias on the three MLP projections).
func llamaConfig(md *meta, c map[string]any) error {
	_, qb := md.m.tensor("blk.0.attn_q.bias")
	_, ub := md.m.tensor("blk.0.ffn_up.bias")
	c["attention_bias"], c["mlp_bias"] = qb, ub
	return nil
}

// gemma2Config: the softcaps, the sliding window on every other layer
// (llama.cpp's set_swa_pattern(2)), and the attention scale llama.cpp
// uses, since the file has no query_pre_attn_scalar: 1/√(hidden/heads)
// for the 46-layer 27B, 1/√head_dim otherwise (llama_model::load_hparams).
func gemma2Config(md *meta, c map[string]any) error {
	if v := md.float("attn_logit_softcapping", 0); v > 0 {
		c["attn_logit_softcapping"] = v
	}
	if v := md.float("final_logit_softcapping", 0); v > 0 {
		c["final_logit_softcapping"] = v
	}
	gemmaAttnScale(c)
	return slidingLayers(md, c, 2)
}

// gemma3Config: sliding layers five in six (llama.cpp's
// set_swa_pattern(6)), whose rope has base 10000 unscaled
// (rope_freq_base_train_swa); the global layers take rope.freq_base and
// the scaling; the same attention scale rule as Gemma 2 (27B: 62 layers).
func gemma3Config(md *meta, c map[string]any) error {
	gemmaAttnScale(c)
	full := c["rope_parameters"].(map[string]any)
	if full["rope_type"] == "longrope" || full["rope_type"] == "yarn" {
		return fmt.Errorf("gemma3: rope %s is not a Gemma 3 rope", full["rope_type"])
	}
	c["rope_parameters"] = map[string]any{
		"full_attention":    full,
		"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 10000.0},
	}
	return slidingLayers(md, c, 6)
}

func gemmaAttnScale(c map[string]any) {
	layers, hidden, heads := c["num_hidden_layers"].(int), c["hidden_size"].(int), c["num_attention_heads"].(int)
	scalar := c["head_dim"].(int)
	if mt := c["model_type"]; mt == "gemma2" && layers == 46 || mt == "gemma3_text" && layers == 62 {
		scalar = hidden / heads
	}
	c["query_pre_attn_scalar"] = scalar
}

// slidingLayers writes sliding_window and layer_types: the layers of a
// period-n pattern slide except every n-th (llama_hparams::set_swa_pattern),
// unless the file lists them ({arch}.attention.sliding_window_pattern, a
// bool per layer, true where it slides).
func slidingLayers(md *meta, c map[string]any, period int) error {
	window := md.uint("attention.sliding_window", -1)
	if md.err != nil {
		return md.err
	}
	n := c["num_hidden_layers"].(int)
	types := make([]string, n)
	key := md.key("attention.sliding_window_pattern")
	v, listed := md.f.Get(key)
	pattern, isBools := v.V.([]bool)
	if listed && (!isBools || len(pattern) != n) {
		return fmt.Errorf("%s: want a bool for each of the %d layers, have %v (%s)", key, n, v.V, v.Type)
	}
	for i := range types {
		slides := (i+1)%period != 0
		if listed {
			slides = pattern[i]
		}
		types[i] = "full_attention"
		if slides {
			types[i] = "sliding_attention"
		}
	}
	c["sliding_window"], c["layer_types"] = window, types
	return nil
}

// config writes the experts' numbers as llama.cpp's load_hparams reads
// them: expert_count and expert_used_count (TextModel writes both for every
// architecture), an expert's width from expert_feed_forward_length (else
// feed_forward_length / expert_used_count, llama.cpp's fallback), the
// shared expert's from expert_shared_feed_forward_length (else
// feed_forward_length).
func (e *moeArch) config(md *meta, c map[string]any) error {
	experts := md.uint("expert_count", -1)
	used := md.uint("expert_used_count", -1)
	if md.err != nil {
		return md.err
	}
	if experts == 0 || used == 0 || used > experts {
		return fmt.Errorf("%s %d and %s %d: want 1 ≤ experts used ≤ experts", md.key("expert_used_count"), used, md.key("expert_count"), experts)
	}
	ff := c["intermediate_size"].(int)
	c[e.expertsKey], c["num_experts_per_tok"], c["norm_topk_prob"] = experts, used, e.normTopK
	if e.interKey != "" {
		c[e.interKey] = md.uint("expert_feed_forward_length", ff/used)
	}
	if e.shared {
		c["shared_expert_intermediate_size"] = md.uint("expert_shared_feed_forward_length", ff)
	}
	if e.denseLayers {
		dense := []int{}
		for i := range c["num_hidden_layers"].(int) {
			if _, ok := md.m.tensor(fmt.Sprintf("blk.%d.ffn_gate_inp.weight", i)); !ok {
				dense = append(dense, i)
			}
		}
		c["decoder_sparse_step"], c["mlp_only_layers"] = 1, dense
	}
	return md.err
}

// glm4Config: biases as Llama's. Glm4Model converts GLM-4V's text model
// under "glm4" too, with M-RoPE sections and Q/K rows reordered for it
// (normal_to_neox), which Hearth does not undo: such a file is refused.
func glm4Config(md *meta, c map[string]any) error {
	if key := md.key("rope.dimension_sections"); md.has(key) {
		return fmt.Errorf("%s: M-RoPE (GLM-4V) is not read from GGUF", key)
	}
	return llamaConfig(md, c)
}

// starcoder2Config: LayerNorm's epsilon, which llama.cpp requires
// ({arch}.attention.layer_norm_epsilon), and biases on every linear.
func starcoder2Config(md *meta, c map[string]any) error {
	if key := md.key("attention.layer_norm_epsilon"); !md.has(key) {
		return fmt.Errorf("%s: missing", key)
	}
	c["norm_epsilon"], c["use_bias"] = md.float("attention.layer_norm_epsilon", 0), true
	return nil
}

// graniteConfig: Granite's multipliers, as llama_model_granite's
// load_arch_hparams reads them. GraniteModel writes each only when
// config.json gives a non-zero one; llama.cpp requires logit_scale and
// reads a missing other one as none: no scaling, and the attention scale
// 1/√head_dim. rope.scaling.finetuned false (GraniteHybridModel's switch)
// turns rope off on every layer.
func graniteConfig(md *meta, c map[string]any) error {
	if key := md.key("logit_scale"); !md.has(key) {
		return fmt.Errorf("%s: missing", key)
	}
	c["logits_scaling"] = md.float("logit_scale", 1)
	c["embedding_multiplier"] = md.float("embedding_scale", 1)
	c["residual_multiplier"] = md.float("residual_scale", 1)
	c["attention_multiplier"] = md.float("attention.scale", 1/math.Sqrt(float64(c["head_dim"].(int))))
	if v, ok := md.f.Get(md.key("rope.scaling.finetuned")); ok && v.V == false {
		c["no_rope_layers"] = make([]int, c["num_hidden_layers"].(int))
	}
	return llamaConfig(md, c)
}

// smollm3Config: llama.cpp's SmolLM3 graph skips rope on every fourth
// layer (hparams.n_no_rope_layer_step, 4, which no GGUF key sets), whatever
// config.json's no_rope_layers said (the converter writes none of it);
// it is the list transformers derives from no_rope_layer_interval 4.
func smollm3Config(md *meta, c map[string]any) error {
	use := make([]int, c["num_hidden_layers"].(int))
	for i := range use {
		if (i+1)%4 != 0 {
			use[i] = 1
		}
	}
	c["no_rope_layers"], c["no_rope_layer_interval"] = use, 4
	return llamaConfig(md, c)
}
