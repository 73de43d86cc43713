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
	// a tiny Llama for tests of the benchmark itself; Shapes leaves it out
	testShape: {
		Name: testShape, ModelType: "llama",
		HiddenSize: 128, IntermediateSize: 256, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 32, VocabSize: 320,
		TieWordEmbeddings: true, RMSNormEps: 1e-5, RopeTheta: 10000, MaxPosition: 4096,
	},
}

const testShape = "test-tiny"

// Shapes lists the synthetic shape names, sorted.
func Shapes() []string {
	var out []string
	for name := range shapes {
		if name != testShape {
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
		"rope_theta":              s.RopeTheta,
		"max_position_embeddings": s.MaxPosition,
		"hidden_act":              "silu",
		"torch_dtype":             "bfloat16",
		"bos_token_id":            1,
		"eos_token_id":            2,
	}
	if s.RopeScaling != nil {
		c["rope_scaling"] = s.RopeScaling
	}
	if s.ModelType == "qwen2" {
		c["use_sliding_window"] = false
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
	}
	return "LlamaForCausalLM"
}
