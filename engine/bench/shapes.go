package bench

import (
	"fmt"
	"sort"
	"strings"
)

// Shape is the architecture of a real checkpoint, enough to build a
// random-weight model that runs exactly the same kernels on exactly the
// same tensor shapes. The fields are the config.json keys.
type Shape struct {
	Name              string
	ModelType         string
	HiddenSize        int
	IntermediateSize  int
	NumHiddenLayers   int
	NumAttentionHeads int
	NumKeyValueHeads  int
	HeadDim           int
	VocabSize         int
	TieWordEmbeddings bool
	QKVBias           bool // Qwen2: q, k and v projections carry a bias
	RMSNormEps        float64
	RopeTheta         float64
	// RopeScaling is the rope_scaling object (Llama 3's), or nil.
	RopeScaling map[string]any
	MaxPosition int
	// Gemma4 and Qwen35 make the shape one of the targeted families'
	// (engine/family/gemma4, engine/family/qwen35): their own config keys
	// and tensors, run through those families' graphs. At most one is set.
	Gemma4 *Gemma4Shape
	Qwen35 *Qwen35Shape
	// Gemma3 makes it Gemma 3 with its vision tower (the universal tier's
	// gemma3_text decoder and engine/tower/siglip).
	Gemma3 *Gemma3Shape
}

// Gemma4Shape is what a Gemma 4 text decoder (model_type gemma4_text) adds:
// the config keys engine/family/gemma4 reads.
type Gemma4Shape struct {
	GlobalHeadDim  int     // global_head_dim: the head size of full-attention layers
	PerLayerInput  int     // hidden_size_per_layer_input (PLE width; 0: none)
	PerLayerVocab  int     // vocab_size_per_layer_input
	KVSharedLayers int     // num_kv_shared_layers
	SlidingWindow  int     // sliding_window
	FullEvery      int     // every FullEvery-th layer is full attention, the rest sliding
	FinalSoftcap   float64 // final_logit_softcapping
	DoubleWideMLP  bool    // use_double_wide_mlp (the shared layers' MLPs twice as wide)
	FullRopeTheta  float64 // proportional rope of the full layers (RopeTheta: the sliding ones')
	FullRotary     float64 // its partial_rotary_factor
}

// Qwen35Shape is what a dense Qwen 3.5 text decoder (model_type
// qwen3_5_text) adds: the Gated DeltaNet layers' sizes and the gated full
// attention's partial rope, as engine/family/qwen35 reads them.
type Qwen35Shape struct {
	ConvKernel    int // linear_conv_kernel_dim
	KeyHeadDim    int // linear_key_head_dim
	ValueHeadDim  int // linear_value_head_dim
	KeyHeads      int // linear_num_key_heads
	ValueHeads    int // linear_num_value_heads
	FullEvery     int // full_attention_interval: every FullEvery-th layer is full attention
	PartialRotary float64
}

// layerTypes is the layer_types list of a targeted family's shape.
func (s Shape) layerTypes() []string {
	out := make([]string, s.NumHiddenLayers)
	for i := range out {
		switch {
		case s.Gemma4 != nil && (i+1)%s.Gemma4.FullEvery != 0,
			s.Gemma3 != nil && (i+1)%s.Gemma3.FullEvery != 0:
			out[i] = "sliding_attention"
		case s.Qwen35 != nil && (i+1)%s.Qwen35.FullEvery != 0:
			out[i] = "linear_attention"
		default:
			out[i] = "full_attention"
		}
	}
	return out
}

var llama3Rope = func(factor float64) map[string]any {
	return map[string]any{
		"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0,
		"high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
	}
}

// shapes are the configs of the checkpoints `hearth bench --synthetic`
// imitates, copied from their config.json files on the Hugging Face Hub.
var shapes = map[string]Shape{
	"llama-3.2-1b": {
		Name: "llama-3.2-1b", ModelType: "llama",
		HiddenSize: 2048, IntermediateSize: 8192, NumHiddenLayers: 16,
		NumAttentionHeads: 32, NumKeyValueHeads: 8, HeadDim: 64, VocabSize: 128256,
		TieWordEmbeddings: true, RMSNormEps: 1e-5, RopeTheta: 500000,
		RopeScaling: llama3Rope(32), MaxPosition: 131072,
	},
	"llama-3.1-8b": {
		Name: "llama-3.1-8b", ModelType: "llama",
		HiddenSize: 4096, IntermediateSize: 14336, NumHiddenLayers: 32,
		NumAttentionHeads: 32, NumKeyValueHeads: 8, HeadDim: 128, VocabSize: 128256,
		TieWordEmbeddings: false, RMSNormEps: 1e-5, RopeTheta: 500000,
		RopeScaling: llama3Rope(8), MaxPosition: 131072,
	},
	"qwen2.5-0.5b": {
		Name: "qwen2.5-0.5b", ModelType: "qwen2",
		HiddenSize: 896, IntermediateSize: 4864, NumHiddenLayers: 24,
		NumAttentionHeads: 14, NumKeyValueHeads: 2, HeadDim: 64, VocabSize: 151936,
		TieWordEmbeddings: true, QKVBias: true, RMSNormEps: 1e-6, RopeTheta: 1000000,
		MaxPosition: 32768,
	},
	"qwen3-1.7b": {
		Name: "qwen3-1.7b", ModelType: "qwen3",
		HiddenSize: 2048, IntermediateSize: 6144, NumHiddenLayers: 28,
		NumAttentionHeads: 16, NumKeyValueHeads: 8, HeadDim: 128, VocabSize: 151936,
		TieWordEmbeddings: true, RMSNormEps: 1e-6, RopeTheta: 1000000,
		MaxPosition: 40960,
	},
	// Gemma 4 E4B's text decoder: 42 layers, five sliding (window 512,
	// head 256) to one full (head 512, proportional rope on a quarter of
	// it); the last 18 layers read the keys and values of the last earlier
	// layer of their type; per-layer input embeddings (PLE) 256 wide from a
	// 262144 × (42·256) table. No google/gemma-4-E4B config.json was
	// reachable from here: the numbers are the text_config that ollama's
	// Gemma 4 port tests its parser with (ollama/ollama,
	// x/models/gemma4/gemma4_test.go, TestParseTextConfigE4B), and agree
	// with NVIDIA Megatron-Bridge's Gemma 4 E4B recipe (42 layers, hidden
	// 2560, FFN 10240, 8 heads, 2 KV heads, global head 512, PLE 262144 ×
	// 256, 18 shared-KV layers) and gemma.cpp's E4B config (window 512,
	// final cap 30). Less certain: max_position_embeddings (131072, from
	// the same test; it only sizes the rope tables) and the rope thetas
	// (10000 sliding, 1e6 full, partial 0.25: the same test and
	// Megatron-Bridge). The audio and vision towers are not part of the
	// shape (this port runs text only).
	"gemma-4-e4b": {
		Name: "gemma-4-e4b", ModelType: "gemma4_text",
		HiddenSize: 2560, IntermediateSize: 10240, NumHiddenLayers: 42,
		NumAttentionHeads: 8, NumKeyValueHeads: 2, HeadDim: 256, VocabSize: 262144,
		TieWordEmbeddings: true, RMSNormEps: 1e-6, RopeTheta: 10000, MaxPosition: 131072,
		Gemma4: &Gemma4Shape{
			GlobalHeadDim: 512, PerLayerInput: 256, PerLayerVocab: 262144, KVSharedLayers: 18,
			SlidingWindow: 512, FullEvery: 6, FinalSoftcap: 30, FullRopeTheta: 1e6, FullRotary: 0.25,
		},
	},
	// Qwen 3.5's dense text decoders: three Gated DeltaNet layers (16 key
	// heads, 32 value heads, 128 wide each, conv 4) to one gated full
	// attention layer (16 heads, 4 KV heads of 256, rope on a quarter);
	// vocabulary 248320. The numbers are those of the published
	// Qwen/Qwen3.5-4B and -9B config.json files, as written out in
	// engine/family/qwen35/testdata/configs (which TestPublishedConfigs
	// pins to the named sizes). The vision tower and the multi-token-
	// prediction head are not part of the shape.
	"qwen3.5-4b": {
		Name: "qwen3.5-4b", ModelType: "qwen3_5_text",
		HiddenSize: 2560, IntermediateSize: 9216, NumHiddenLayers: 32,
		NumAttentionHeads: 16, NumKeyValueHeads: 4, HeadDim: 256, VocabSize: 248320,
		TieWordEmbeddings: true, RMSNormEps: 1e-6, RopeTheta: 10000000, MaxPosition: 262144,
		Qwen35: &qwen35Published,
	},
	"qwen3.5-9b": {
		Name: "qwen3.5-9b", ModelType: "qwen3_5_text",
		HiddenSize: 4096, IntermediateSize: 12288, NumHiddenLayers: 32,
		NumAttentionHeads: 16, NumKeyValueHeads: 4, HeadDim: 256, VocabSize: 248320,
		TieWordEmbeddings: false, RMSNormEps: 1e-6, RopeTheta: 10000000, MaxPosition: 262144,
		Qwen35: &qwen35Published,
	},
	// Gemma 3 4B with its vision tower (mlx-community/gemma-3-4b-it-4bit's
	// upstream config, as engine/registry/catalog.json holds it): the
	// gemma3_text decoder, five sliding layers (window 1024) to one full
	// (linear rope ×8), and SigLIP so400m at 896 px (27 layers, 4096
	// patches), average-pooled to 256 soft tokens.
	"gemma-3-4b": {
		Name: "gemma-3-4b", ModelType: "gemma3",
		HiddenSize: 2560, IntermediateSize: 10240, NumHiddenLayers: 34,
		NumAttentionHeads: 8, NumKeyValueHeads: 4, HeadDim: 256, VocabSize: 262208,
		TieWordEmbeddings: true, RMSNormEps: 1e-6, RopeTheta: 1e6, MaxPosition: 131072,
		Gemma3: &Gemma3Shape{
			SlidingWindow: 1024, FullEvery: 6, LocalRopeTheta: 10000, RopeFactor: 8, QueryScalar: 256,
			VisionHidden: 1152, VisionIntermediate: 4304, VisionLayers: 27, VisionHeads: 16,
			ImageSize: 896, PatchSize: 14, ImageTokens: 256,
			BOI: 255999, EOI: 256000, ImageToken: 262144,
		},
	},
	// a tiny Gemma 3 with a vision tower, for tests; Shapes leaves it out
	testVisionShape: {
		Name: testVisionShape, ModelType: "gemma3",
		HiddenSize: 64, IntermediateSize: 128, NumHiddenLayers: 3,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, VocabSize: 512,
		TieWordEmbeddings: true, RMSNormEps: 1e-6, RopeTheta: 1e6, MaxPosition: 4096,
		Gemma3: &Gemma3Shape{
			SlidingWindow: 8, FullEvery: 3, LocalRopeTheta: 10000, RopeFactor: 8, QueryScalar: 16,
			VisionHidden: 32, VisionIntermediate: 64, VisionLayers: 2, VisionHeads: 2,
			ImageSize: 64, PatchSize: 8, ImageTokens: 16,
			BOI: 509, EOI: 510, ImageToken: 511,
		},
	},
	// a tiny Llama for tests of the benchmark itself; Shapes leaves it out
	testShape: {
		Name: testShape, ModelType: "llama",
		HiddenSize: 128, IntermediateSize: 256, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 32, VocabSize: 320,
		TieWordEmbeddings: true, RMSNormEps: 1e-5, RopeTheta: 10000, MaxPosition: 4096,
	},
}

// qwen35Published is the DeltaNet geometry every published dense Qwen 3.5
// size shares.
var qwen35Published = Qwen35Shape{
	ConvKernel: 4, KeyHeadDim: 128, ValueHeadDim: 128, KeyHeads: 16, ValueHeads: 32,
	FullEvery: 4, PartialRotary: 0.25,
}

const (
	testShape       = "test-tiny"
	testVisionShape = "test-tiny-vision"
)

// Shapes lists the synthetic shape names, sorted.
func Shapes() []string {
	var out []string
	for name := range shapes {
		if name != testShape && name != testVisionShape {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func lookupShape(name string) (Shape, error) {
	if s, ok := shapes[name]; ok {
		return s, nil
	}
	return Shape{}, fmt.Errorf("unknown synthetic shape %q (known: %s)", name, strings.Join(Shapes(), ", "))
}

// Quant is a storage format for synthetic weights.
type Quant struct {
	Name  string
	Bits  int // 0: dense BF16
	Group int
}

var quants = []Quant{{"q4g64", 4, 64}, {"q8g32", 8, 32}, {"bf16", 0, 0}}

// Quants lists the synthetic storage formats.
func Quants() []string {
	var out []string
	for _, q := range quants {
		out = append(out, q.Name)
	}
	return out
}

func lookupQuant(name string) (Quant, error) {
	for _, q := range quants {
		if q.Name == name {
			return q, nil
		}
	}
	return Quant{}, fmt.Errorf("unknown quantization %q (known: %s)", name, strings.Join(Quants(), ", "))
}

// config is the config.json of a synthetic checkpoint, spelled as the real
// one (plus MLX's quantization object when quantized).
func (s Shape) config(q Quant) map[string]any {
	if s.Gemma3 != nil {
		return s.gemma3Config(q)
	}
	c := map[string]any{
		"architectures":           []string{archOf(s.ModelType)},
		"model_type":              s.ModelType,
		"hidden_size":             s.HiddenSize,
		"intermediate_size":       s.IntermediateSize,
		"num_hidden_layers":       s.NumHiddenLayers,
		"num_attention_heads":     s.NumAttentionHeads,
		"num_key_value_heads":     s.NumKeyValueHeads,
		"head_dim":                s.HeadDim,
		"vocab_size":              s.VocabSize,
		"tie_word_embeddings":     s.TieWordEmbeddings,
		"rms_norm_eps":            s.RMSNormEps,
		"max_position_embeddings": s.MaxPosition,
		"hidden_act":              "silu",
		"torch_dtype":             "bfloat16",
		"bos_token_id":            1,
		"eos_token_id":            2,
	}
	switch {
	case s.Gemma4 != nil:
		g := s.Gemma4
		c["hidden_activation"] = "gelu_pytorch_tanh"
		c["layer_types"] = s.layerTypes()
		c["global_head_dim"] = g.GlobalHeadDim
		c["hidden_size_per_layer_input"] = g.PerLayerInput
		c["vocab_size_per_layer_input"] = g.PerLayerVocab
		c["num_kv_shared_layers"] = g.KVSharedLayers
		c["sliding_window"] = g.SlidingWindow
		c["final_logit_softcapping"] = g.FinalSoftcap
		c["use_double_wide_mlp"] = g.DoubleWideMLP
		c["attention_k_eq_v"] = false
		c["enable_moe_block"] = false
		c["attention_bias"] = false
		c["rope_parameters"] = map[string]any{
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": s.RopeTheta},
			"full_attention": map[string]any{"rope_type": "proportional", "rope_theta": g.FullRopeTheta,
				"partial_rotary_factor": g.FullRotary},
		}
	case s.Qwen35 != nil:
		d := s.Qwen35
		c["layer_types"] = s.layerTypes()
		c["full_attention_interval"] = d.FullEvery
		c["linear_conv_kernel_dim"] = d.ConvKernel
		c["linear_key_head_dim"] = d.KeyHeadDim
		c["linear_value_head_dim"] = d.ValueHeadDim
		c["linear_num_key_heads"] = d.KeyHeads
		c["linear_num_value_heads"] = d.ValueHeads
		c["attention_bias"] = false
		c["rope_parameters"] = map[string]any{"rope_type": "default", "rope_theta": s.RopeTheta,
			"partial_rotary_factor": d.PartialRotary}
	default:
		c["rope_theta"] = s.RopeTheta
		if s.RopeScaling != nil {
			c["rope_scaling"] = s.RopeScaling
		}
		if s.ModelType == "qwen2" {
			c["use_sliding_window"] = false
		}
	}
	if q.Bits > 0 {
		qc := map[string]any{"group_size": q.Group, "bits": q.Bits}
		c["quantization"] = qc
		c["quantization_config"] = qc
	}
	return c
}

func archOf(modelType string) string {
	switch modelType {
	case "qwen2":
		return "Qwen2ForCausalLM"
	case "qwen3":
		return "Qwen3ForCausalLM"
	case "gemma4_text":
		return "Gemma4ForCausalLM"
	case "qwen3_5_text":
		return "Qwen3_5ForCausalLM"
	}
	return "LlamaForCausalLM"
}
