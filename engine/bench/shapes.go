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
	// Audio makes the shape a Gemma4ForConditionalGeneration (model_type
	// gemma4) with this audio tower (engine/tower/gemma4audio); nil: the
	// text decoder alone.
	Audio *Gemma4AudioShape
	// Vision does the same with this vision tower
	// (engine/tower/gemma4vision).
	Vision *Gemma4VisionShape
}

// multimodal reports whether the shape is a Gemma4ForConditionalGeneration
// with a tower.
func (g *Gemma4Shape) multimodal() bool { return g.Audio != nil || g.Vision != nil }

// Gemma4VisionShape is a Gemma 4 vision_config (Gemma4VisionConfig's
// keys), its image processor's soft-token budget and the special tokens
// that hold a picture in a prompt.
type Gemma4VisionShape struct {
	Hidden, Intermediate, Layers, Heads, KVHeads, HeadDim int
	PatchSize, Pool, PosSize                              int // patch_size, pooling_kernel_size, position_embedding_size
	Clipped, Standardize                                  bool
	// MaxSoftTokens is the image processor's max_soft_tokens.
	MaxSoftTokens int
	// BOI, EOI, Image and Video are boi_token_id, eoi_token_id,
	// image_token_id and video_token_id.
	BOI, EOI, Image, Video int
}

// Gemma4AudioShape is a Gemma 4 audio_config (Gemma4AudioConfig's keys)
// and the special tokens that hold a clip in a prompt.
type Gemma4AudioShape struct {
	Hidden, Layers, Heads            int
	Channels                         [2]int // subsampling_conv_channels
	ConvKernel                       int
	Chunk, ContextLeft, ContextRight int // attention_chunk_size, attention_context_left, _right
	LogitCap                         float64
	OutDims                          int // output_proj_dims
	// Token, BOA and EOA are audio_token_id, boa_token_id and
	// eoa_token_index.
	Token, BOA, EOA int
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
	// Vision makes the shape a Qwen3_5ForConditionalGeneration (model_type
	// qwen3_5) with this vision tower (engine/tower/qwenvl); nil: the text
	// decoder alone.
	Vision *QwenVisionShape
}

// QwenVisionShape is a Qwen 3.5 vision_config (Qwen3_5VisionConfig's
// keys), its image processor's pixel bounds, the decoder's mRoPE split
// (which only a model with the tower needs) and the special tokens.
type QwenVisionShape struct {
	Depth, Hidden, Intermediate, Heads int
	PatchSize, Merge, Temporal, NumPos int // patch_size, spatial_merge_size, temporal_patch_size, num_position_embeddings
	// MinPixels and MaxPixels are the processor's size.shortest_edge and
	// size.longest_edge, smart_resize's bounds.
	MinPixels, MaxPixels int
	MRopeSection         [3]int // text_config.rope_parameters.mrope_section
	// Image, Video, Start and End are image_token_id, video_token_id,
	// vision_start_token_id and vision_end_token_id.
	Image, Video, Start, End int
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
	// Megatron-Bridge). The towers are not part of this shape;
	// gemma-4-e4b-audio (init, below) adds the audio tower.
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

// The tiny shapes for tests, which Shapes leaves out (their names start
// with "test-").
const (
	testShape             = "test-tiny"
	testVisionShape       = "test-tiny-vision"
	testAudioShape        = "test-tiny-audio"
	testQwenVisionShape   = "test-tiny-qwen-vision"
	testGemma4VisionShape = "test-tiny-gemma4-vision"
)

// gemma4AudioPublished is the audio tower of Gemma 4 E2B and E4B (one
// audio_config for both): transformers 5.17's Gemma4AudioConfig defaults,
// which are the released checkpoints' values as ollama's Gemma 4 port
// pins them (ollama/ollama, x/models/gemma4, TestParseReleasedAudioConfig):
// a 12-layer conformer 1024 wide (8 heads), subsampling channels 128 and
// 32, light conv kernel 5, chunks of 12 seeing 12 frames back, logits
// capped at 50, output 1536 wide; the special tokens are Gemma4Config's
// defaults.
var gemma4AudioPublished = Gemma4AudioShape{
	Hidden: 1024, Layers: 12, Heads: 8, Channels: [2]int{128, 32}, ConvKernel: 5,
	Chunk: 12, ContextLeft: 13, ContextRight: 0, LogitCap: 50, OutDims: 1536,
	Token: 258881, BOA: 256000, EOA: 258883,
}

// testAudio is a tiny audio tower of the same structure (the 128
// channels of the first subsampling convolution are the mel bins, which
// the reference's projection needs), its tokens the last of a 320-token
// vocabulary.
var testAudio = Gemma4AudioShape{
	Hidden: 32, Layers: 2, Heads: 2, Channels: [2]int{128, 8}, ConvKernel: 5,
	Chunk: 12, ContextLeft: 13, ContextRight: 0, LogitCap: 50, OutDims: 48,
	Token: 317, BOA: 318, EOA: 319,
}

// withAudio is Gemma 4 shape s with audio tower a, named name.
func withAudio(s Shape, name string, a Gemma4AudioShape) Shape {
	g := *s.Gemma4
	g.Audio = &a
	s.Name, s.ModelType, s.Gemma4 = name, "gemma4", &g
	return s
}

// gemma4VisionPublished is the vision tower of Gemma 4 E2B and E4B:
// transformers 5.17's Gemma4VisionConfig defaults (16 layers 768 wide, 12
// heads of 64, patches of 16 pooled 3×3, a 10240-row position table),
// which are the E-models' tower, with use_clipped_linears on as the
// E-models' audio_config has it (a third-party writer of full Gemma 4
// configs agrees: 768 wide, 12 heads, clipped, not standardized for the
// models narrower than 2816; no E4B config.json was reachable to read the
// flag from). The processor's budget is
// Gemma4ImageProcessor's default max_soft_tokens, 280; the special tokens
// are Gemma4Config's defaults.
var gemma4VisionPublished = Gemma4VisionShape{
	Hidden: 768, Intermediate: 3072, Layers: 16, Heads: 12, KVHeads: 12, HeadDim: 64,
	PatchSize: 16, Pool: 3, PosSize: 10240, Clipped: true, MaxSoftTokens: 280,
	BOI: 255999, EOI: 258882, Image: 258880, Video: 258884,
}

// testGemma4Vision is a tiny tower of the same structure (grouped KV
// heads, clipped linears, standardization), its tokens the last of a
// 320-token vocabulary; the budget of 70 soft tokens (the smallest the
// processor takes) makes the bench picture 630 patches of 8×8.
var testGemma4Vision = Gemma4VisionShape{
	Hidden: 32, Intermediate: 64, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 16,
	PatchSize: 8, Pool: 3, PosSize: 64, Clipped: true, Standardize: true, MaxSoftTokens: 70,
	BOI: 316, EOI: 317, Image: 318, Video: 319,
}

// withGemma4Vision is Gemma 4 shape s with vision tower v, named name.
func withGemma4Vision(s Shape, name string, v Gemma4VisionShape) Shape {
	g := *s.Gemma4
	g.Vision = &v
	s.Name, s.ModelType, s.Gemma4 = name, "gemma4", &g
	return s
}

// qwenVisionPublished is Qwen 3.5 4B's vision tower. The published
// config as engine/family/qwen35/testdata/configs/qwen3.5-4b.json holds
// it keeps only out_hidden_size (2560, the decoder's width), so the rest
// are transformers 5.17's Qwen3_5VisionConfig defaults (27 blocks 1152
// wide, 16 heads, MLP 4304, patches of 16, 2×2 merge, 2 frames per
// temporal patch, a 48×48 position grid); the processor is the
// checkpoints' (Qwen3VLProcessor: size shortest_edge 65536, longest_edge
// 16777216, mean and std 0.5), the mRoPE split the text_config's [11, 11,
// 10], the special tokens Qwen3_5Config's defaults.
var qwenVisionPublished = QwenVisionShape{
	Depth: 27, Hidden: 1152, Intermediate: 4304, Heads: 16,
	PatchSize: 16, Merge: 2, Temporal: 2, NumPos: 2304,
	MinPixels: 65536, MaxPixels: 16777216, MRopeSection: [3]int{11, 11, 10},
	Image: 248056, Video: 248057, Start: 248053, End: 248054,
}

// testQwenVision is a tiny tower of the same structure, its tokens the
// last of a 320-token vocabulary; its pixel bounds make the bench picture
// 128×96 (16×12 patches of 8, 48 soft tokens). Its mRoPE split is for a
// head of 32 with a quarter of it rotated.
var testQwenVision = QwenVisionShape{
	Depth: 2, Hidden: 32, Intermediate: 64, Heads: 2,
	PatchSize: 8, Merge: 2, Temporal: 2, NumPos: 36,
	MinPixels: 256, MaxPixels: 128 * 96, MRopeSection: [3]int{2, 1, 1},
	Image: 316, Video: 317, Start: 318, End: 319,
}

// withQwenVision is Qwen 3.5 shape s with vision tower v, named name.
func withQwenVision(s Shape, name string, v QwenVisionShape) Shape {
	d := *s.Qwen35
	d.Vision = &v
	s.Name, s.ModelType, s.Qwen35 = name, "qwen3_5", &d
	return s
}

// testGemma4 is a tiny Gemma 4 text decoder named name (sliding and
// full layers, shared KV, per-layer inputs), for the tiny towers' tests.
func testGemma4(name string) Shape {
	return Shape{
		Name: name, ModelType: "gemma4_text",
		HiddenSize: 64, IntermediateSize: 128, NumHiddenLayers: 4,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, VocabSize: 320,
		TieWordEmbeddings: true, RMSNormEps: 1e-6, RopeTheta: 10000, MaxPosition: 4096,
		Gemma4: &Gemma4Shape{
			GlobalHeadDim: 32, PerLayerInput: 64, PerLayerVocab: 320, KVSharedLayers: 2,
			SlidingWindow: 8, FullEvery: 2, FinalSoftcap: 30, FullRopeTheta: 1e6, FullRotary: 0.25,
		},
	}
}

func init() {
	// Gemma 4 E4B whole: its text decoder and its audio tower. A shape of
	// its own, so gemma-4-e4b's text-only numbers and checkpoints stay as
	// they were.
	shapes["gemma-4-e4b-audio"] = withAudio(shapes["gemma-4-e4b"], "gemma-4-e4b-audio", gemma4AudioPublished)
	// Gemma 4 E4B and Qwen 3.5 4B with their vision towers, likewise
	shapes["gemma-4-e4b-vision"] = withGemma4Vision(shapes["gemma-4-e4b"], "gemma-4-e4b-vision", gemma4VisionPublished)
	shapes["qwen3.5-4b-vision"] = withQwenVision(shapes["qwen3.5-4b"], "qwen3.5-4b-vision", qwenVisionPublished)
	// tiny ones, for tests
	shapes[testAudioShape] = withAudio(testGemma4(testAudioShape), testAudioShape, testAudio)
	shapes[testGemma4VisionShape] = withGemma4Vision(testGemma4(testGemma4VisionShape), testGemma4VisionShape, testGemma4Vision)
	shapes[testQwenVisionShape] = withQwenVision(Shape{
		Name: testQwenVisionShape, ModelType: "qwen3_5_text",
		HiddenSize: 64, IntermediateSize: 128, NumHiddenLayers: 2,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 32, VocabSize: 320,
		TieWordEmbeddings: true, RMSNormEps: 1e-6, RopeTheta: 1e6, MaxPosition: 4096,
		Qwen35: &Qwen35Shape{ConvKernel: 4, KeyHeadDim: 32, ValueHeadDim: 32, KeyHeads: 1, ValueHeads: 2, FullEvery: 2, PartialRotary: 0.25},
	}, testQwenVisionShape, testQwenVision)
}

// Shapes lists the synthetic shape names, sorted.
func Shapes() []string {
	var out []string
	for name := range shapes {
		if !strings.HasPrefix(name, "test-") {
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
	if s.Gemma4 != nil && s.Gemma4.multimodal() {
		return s.gemma4MultimodalConfig(q)
	}
	if s.Qwen35 != nil && s.Qwen35.Vision != nil {
		return s.qwen35VisionConfig(q)
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
