// Package universal is the generic tier: one decoder graph driven by a
// descriptor per model_type that says only how that type departs from the
// plain pre-norm Llama decoder.
package universal

import (
	"sort"

	"hearth/engine/config"
	"hearth/engine/family"
)

// Descriptor lists how one model_type differs from the plain decoder. Its
// zero value is Llama. Values that are numbers in config.json (softcaps,
// query_pre_attn_scalar, no_rope_layers, per-layer-type rope) are read from
// the config when present; the descriptor says what the checkpoint looks like.
type Descriptor struct {
	Norm       NormKind   // RMSNorm (zero), OffsetRMSNorm (scale 1+w), LayerNorm (weight and bias)
	NormEpsKey string     // config key of the norm epsilon; "" = rms_norm_eps
	Block      BlockKind  // PreNorm (zero), Sandwich, PostNorm, GLM
	MLP        MLPKind    // Gated (zero: act(gate)·up), Plain (c_fc → act → c_proj)
	QKVBias    bool       // q/k/v projections carry .bias (Qwen2); attention_bias in config adds o too
	NoOBias    bool       // attention_bias leaves o_proj without bias (GLM-4)
	AllBias    bool       // every linear carries .bias (StarCoder2's use_bias)
	FusedQKV   bool       // one self_attn.qkv_proj (Phi-3)
	FusedUp    bool       // one mlp.gate_up_proj, gate first (Phi-3, GLM-4)
	QKNorm     QKNormKind // NoQKNorm (zero), PerHead (before rope), FullWidth (on the projection)
	EmbedScale bool       // embeddings times √hidden (Gemma)
	// Multipliers reads Granite's embedding_multiplier, attention_multiplier
	// (the attention scale), residual_multiplier and logits_scaling.
	Multipliers bool
	// RopeTraditional rotates adjacent pairs of the rotary dims (GLM-4).
	RopeTraditional bool
	// MoE makes the feed-forward blocks sparse mixtures of experts (moe.go);
	// nil is dense.
	MoE *MoE
	// MediaSpans lets each media item's rows (an image's soft tokens)
	// attend to each other both ways during the pass that holds them
	// (Gemma 3's token_type_ids mask; tensor.AttnSpec.Spans).
	MediaSpans bool
	// Ignore lists checkpoint tensors we knowingly skip; the audit allows these.
	Ignore []string
}

// NormKind is how a norm layer normalizes.
type NormKind uint8

const (
	RMSNorm       NormKind = iota
	OffsetRMSNorm          // Gemma: x/rms(x) · (1 + w)
	LayerNorm              // StarCoder2: (x-mean)/std · w + b
)

// BlockKind is where a decoder layer puts its norms.
type BlockKind uint8

const (
	// PreNorm: x + attn(norm(x)), then x + mlp(norm(x)) (Llama).
	PreNorm BlockKind = iota
	// Sandwich: x + norm(attn(norm(x))), then x + norm(mlp(norm(x))) with
	// norms input_layernorm, post_attention_layernorm,
	// pre_feedforward_layernorm, post_feedforward_layernorm (Gemma 2, 3).
	Sandwich
	// PostNorm: x + norm(attn(x)), then x + norm(mlp(x)) with
	// post_attention_layernorm and post_feedforward_layernorm (OLMo 2).
	PostNorm
	// GLM: like Sandwich with input_layernorm, post_self_attn_layernorm,
	// post_attention_layernorm (before the MLP) and post_mlp_layernorm.
	GLM
)

// MLPKind is the feed-forward shape.
type MLPKind uint8

const (
	Gated MLPKind = iota // down(act(gate(x)) · up(x)), activation from hidden_act
	Plain                // c_proj(act(c_fc(x)))
)

// QKNormKind is how queries and keys are normalized before attention.
type QKNormKind uint8

const (
	NoQKNorm  QKNormKind = iota
	PerHead              // q_norm/k_norm over head_dim after the reshape (Qwen3, Gemma 3)
	FullWidth            // q_norm/k_norm over the whole projection (OLMo 2)
)

var inv = []string{"*.rotary_emb.inv_freq"}

// descriptors is keyed by config model_type. Each entry is green in the
// parity manifest (testdata/models/manifest.json); a test keeps it so.
var descriptors = map[string]Descriptor{
	"llama":       {Ignore: inv},
	"qwen2":       {QKVBias: true, Ignore: inv},
	"qwen3":       {QKNorm: PerHead},
	"gemma":       {Norm: OffsetRMSNorm, EmbedScale: true},
	"gemma2":      {Norm: OffsetRMSNorm, EmbedScale: true, Block: Sandwich},
	"gemma3_text": {Norm: OffsetRMSNorm, EmbedScale: true, Block: Sandwich, QKNorm: PerHead, MediaSpans: true},
	"phi3":        {FusedQKV: true, FusedUp: true},
	"olmo2":       {Block: PostNorm, QKNorm: FullWidth},
	"glm4":        {Block: GLM, FusedUp: true, RopeTraditional: true, NoOBias: true},
	"starcoder2":  {Norm: LayerNorm, NormEpsKey: "norm_epsilon", MLP: Plain, AllBias: true},
	"smollm3":     {},
	"qwen3_moe":   {QKNorm: PerHead, MoE: &MoE{Prefix: "mlp", ExpertsKey: "num_experts", InterKey: "moe_intermediate_size", SparseStep: true}},
	"qwen2_moe":   {QKVBias: true, Ignore: inv, MoE: &MoE{Prefix: "mlp", ExpertsKey: "num_experts", InterKey: "moe_intermediate_size", SparseStep: true, Shared: true}},
	"mixtral":     {Ignore: inv, MoE: &MoE{Prefix: "block_sparse_moe", ExpertsKey: "num_local_experts", AlwaysNorm: true, Names: [3]string{"w1", "w3", "w2"}}},
	"olmoe":       {QKNorm: FullWidth, MoE: &MoE{Prefix: "mlp", ExpertsKey: "num_experts"}},
	"granite":     {Multipliers: true},
}

// aliases maps a model_type onto a descriptor it reuses unchanged, as
// mlx-lm's MODEL_REMAPPING does.
var aliases = map[string]string{
	"mistral": "llama",
}

// Lookup returns the descriptor for a model_type, following aliases.
func Lookup(modelType string) (Descriptor, string, bool) {
	if to, ok := aliases[modelType]; ok {
		modelType = to
	}
	d, ok := descriptors[modelType]
	return d, modelType, ok
}

// Types lists every model_type the generic tier accepts, aliases included.
func Types() []string {
	var out []string
	for t := range descriptors {
		out = append(out, t)
	}
	for t := range aliases {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Family is the generic tier's registry entry.
var Family = family.Family{
	Name: "universal",
	Tier: family.Generic,
	Accepts: func(c *config.Config) bool {
		_, _, ok := Lookup(c.TextModelType)
		return ok
	},
	Fidelity: "parity vs transformers 5.17 (f32 max-abs logit ≤ 1e-4, greedy ids exact)",
	Types:    Types,
	New:      New,
	// Forward splices any tower's output; which towers exist is the
	// engine's tower list (Gemma 3's SigLIP).
	Media: func(*config.Config) family.Caps { return family.Vision },
}
