package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"hearth/engine"
	"hearth/engine/checkpoint"
	"hearth/engine/sample"
	"hearth/media"
)

// Gemma3Shape makes the shape a Gemma 3 with its vision tower (model_type
// gemma3, Gemma3ForConditionalGeneration): the Shape's fields are the
// text_config's, these the rest, as engine/tower/siglip binds them.
type Gemma3Shape struct {
	SlidingWindow  int     // text_config.sliding_window
	FullEvery      int     // every FullEvery-th layer is full attention, the rest sliding
	LocalRopeTheta float64 // the sliding layers' rope theta (RopeTheta: the full ones', linear ×RopeFactor)
	RopeFactor     float64
	QueryScalar    int // query_pre_attn_scalar

	// vision_config: SigLIP.
	VisionHidden, VisionIntermediate, VisionLayers, VisionHeads int
	ImageSize, PatchSize                                        int
	ImageTokens                                                 int // mm_tokens_per_image
	// BOI, EOI and ImageToken are the ids of <start_of_image>,
	// <end_of_image> and <image_soft_token>.
	BOI, EOI, ImageToken int
}

// gemma3Config is config.json of a synthetic Gemma 3 with vision, in
// transformers 5.17's spelling (layer_types, rope_parameters), as
// save_pretrained writes it.
func (s Shape) gemma3Config(q Quant) map[string]any {
	g := s.Gemma3
	text := map[string]any{
		"model_type":              "gemma3_text",
		"hidden_size":             s.HiddenSize,
		"intermediate_size":       s.IntermediateSize,
		"num_hidden_layers":       s.NumHiddenLayers,
		"num_attention_heads":     s.NumAttentionHeads,
		"num_key_value_heads":     s.NumKeyValueHeads,
		"head_dim":                s.HeadDim,
		"vocab_size":              s.VocabSize,
		"rms_norm_eps":            s.RMSNormEps,
		"max_position_embeddings": s.MaxPosition,
		"hidden_activation":       "gelu_pytorch_tanh",
		"query_pre_attn_scalar":   g.QueryScalar,
		"sliding_window":          g.SlidingWindow,
		"layer_types":             s.layerTypes(),
		"tie_word_embeddings":     true,
		"rope_parameters": map[string]any{
			"full_attention":    map[string]any{"rope_type": "linear", "factor": g.RopeFactor, "rope_theta": s.RopeTheta},
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": g.LocalRopeTheta},
		},
	}
	c := map[string]any{
		"architectures":       []string{"Gemma3ForConditionalGeneration"},
		"model_type":          "gemma3",
		"text_config":         text,
		"mm_tokens_per_image": g.ImageTokens,
		"boi_token_index":     g.BOI,
		"eoi_token_index":     g.EOI,
		"image_token_index":   g.ImageToken,
		"tie_word_embeddings": true,
		"torch_dtype":         "bfloat16",
		"vision_config": map[string]any{
			"model_type":          "siglip_vision_model",
			"hidden_size":         g.VisionHidden,
			"intermediate_size":   g.VisionIntermediate,
			"num_hidden_layers":   g.VisionLayers,
			"num_attention_heads": g.VisionHeads,
			"image_size":          g.ImageSize,
			"patch_size":          g.PatchSize,
			"num_channels":        3,
			"hidden_act":          "gelu_pytorch_tanh",
			"layer_norm_eps":      1e-6,
			"vision_use_head":     false,
		},
	}
	if q.Bits > 0 {
		// mlx-vlm leaves the vision tower dense (its quantization
		// predicate skips vision_tower); so does Synthesize.
		qc := map[string]any{"group_size": q.Group, "bits": q.Bits}
		c["quantization"] = qc
		c["quantization_config"] = qc
	}
	return c
}

// gemma3Shards are a Gemma3ForConditionalGeneration checkpoint as
// save_pretrained writes it: the decoder under language_model.model., the
// SigLIP tower under vision_tower. (dense BF16) and the projector.
func (s Shape) gemma3Shards() [][]synthTensor {
	g, h := s.Gemma3, s.HiddenSize
	q, kv := s.NumAttentionHeads*s.HeadDim, s.NumKeyValueHeads*s.HeadDim
	out := [][]synthTensor{{lin("language_model.model.embed_tokens", s.VocabSize, h)}}
	for i := 0; i < s.NumHiddenLayers; i++ {
		p := fmt.Sprintf("language_model.model.layers.%d.", i)
		out = append(out, []synthTensor{
			vec(p+"input_layernorm.weight", h, false),
			vec(p+"post_attention_layernorm.weight", h, false),
			vec(p+"pre_feedforward_layernorm.weight", h, false),
			vec(p+"post_feedforward_layernorm.weight", h, false),
			lin(p+"self_attn.q_proj", q, h),
			lin(p+"self_attn.k_proj", kv, h),
			lin(p+"self_attn.v_proj", kv, h),
			lin(p+"self_attn.o_proj", h, q),
			vec(p+"self_attn.q_norm.weight", s.HeadDim, false),
			vec(p+"self_attn.k_norm.weight", s.HeadDim, false),
			lin(p+"mlp.gate_proj", s.IntermediateSize, h),
			lin(p+"mlp.up_proj", s.IntermediateSize, h),
			lin(p+"mlp.down_proj", h, s.IntermediateSize),
		})
	}
	out = append(out, []synthTensor{vec("language_model.model.norm.weight", h, false)})

	vh, vi := g.VisionHidden, g.VisionIntermediate
	grid := g.ImageSize / g.PatchSize
	tower := []synthTensor{
		dense("vision_tower.embeddings.patch_embedding.weight", vh, 3, g.PatchSize, g.PatchSize),
		vec("vision_tower.embeddings.patch_embedding.bias", vh, false),
		dense("vision_tower.embeddings.position_embedding.weight", grid*grid, vh),
		vec("vision_tower.post_layernorm.weight", vh, true),
		vec("vision_tower.post_layernorm.bias", vh, false),
		dense("multi_modal_projector.mm_input_projection_weight", vh, h),
		vec("multi_modal_projector.mm_soft_emb_norm.weight", vh, false),
	}
	for i := 0; i < g.VisionLayers; i++ {
		p := fmt.Sprintf("vision_tower.encoder.layers.%d.", i)
		tower = append(tower,
			vec(p+"layer_norm1.weight", vh, true), vec(p+"layer_norm1.bias", vh, false),
			vec(p+"layer_norm2.weight", vh, true), vec(p+"layer_norm2.bias", vh, false))
		for _, l := range []struct {
			name      string
			out, in   int
			biasWidth int
		}{
			{"self_attn.q_proj", vh, vh, vh}, {"self_attn.k_proj", vh, vh, vh},
			{"self_attn.v_proj", vh, vh, vh}, {"self_attn.out_proj", vh, vh, vh},
			{"mlp.fc1", vi, vh, vi}, {"mlp.fc2", vh, vi, vh},
		} {
			tower = append(tower, dense(p+l.name+".weight", l.out, l.in), vec(p+l.name+".bias", l.biasWidth, false))
		}
	}
	return append(out, tower)
}

// dense is a BF16 tensor of the given shape that is never quantized.
func dense(name string, dims ...int) synthTensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return synthTensor{name: name, rows: n, dims: dims}
}

// writeGemma3Processor writes the processor_config.json of Gemma 3's
// image processor (SigLIP's fixed size, bilinear, mean and std 0.5).
func (s Shape) writeGemma3Processor(dir string) error {
	g := s.Gemma3
	raw, err := json.MarshalIndent(map[string]any{
		"processor_class":  "Gemma3Processor",
		"image_seq_length": g.ImageTokens,
		"image_processor": map[string]any{
			"image_processor_type": "Gemma3ImageProcessor",
			"do_convert_rgb":       true, "do_normalize": true, "do_rescale": true, "do_resize": true,
			"image_mean": []float64{0.5, 0.5, 0.5}, "image_std": []float64{0.5, 0.5, 0.5},
			"resample": 2, "rescale_factor": 1.0 / 255,
			"size": map[string]int{"height": g.ImageSize, "width": g.ImageSize},
		},
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "processor_config.json"), raw, 0o644)
}

// benchPicture is a 1280×960 picture (a camera photo's 4:3, larger than
// any tower's input, so the processor resizes it as it would a photo).
func benchPicture() media.Image {
	const w, h = 1280, 960
	img := media.Image{Width: w, Height: h, Pix: make([]uint8, 3*w*h)}
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			i := 3 * (y*w + x)
			img.Pix[i], img.Pix[i+1], img.Pix[i+2] = uint8(x*255/w), uint8(y*255/h), uint8((x^y)&0xff)
		}
	}
	return img
}

// ImagePromptText is the text around the picture in the image-prompt
// measurement: tokens before it and after it.
const ImagePromptText = 32

// measureImage times, for a model with a vision tower, the processor and
// the tower on one picture (the encode) and the time to first token of a
// prompt holding that picture between ImagePromptText tokens of text on
// each side (processor, tower and prefill). A tower whose token count
// follows the picture (tower.Gridded: Qwen-VL, Gemma 4) gives its grid's.
func (r *Report) measureImage(ctx context.Context, m *engine.Model, ck *checkpoint.Checkpoint, opt Options) error {
	vp, ok := m.VisionPrompt()
	if !ok {
		return nil
	}
	if vp.Begin < 0 || vp.End < 0 {
		// Qwen-VL: the chat template, not the processor, writes
		// <|vision_start|> and <|vision_end|> around the picture; they are
		// its video prompt's per-patch delimiters
		vid, ok := m.VideoPrompt()
		if !ok || vid.Frames || vid.Begin < 0 || vid.End < 0 {
			return fmt.Errorf("image prompt: the vision tower names no tokens around a picture")
		}
		vp.Begin, vp.End = vid.Begin, vid.End
	}
	proc, err := media.LoadImageProcessor(ck.Dir)
	if err != nil {
		return fmt.Errorf("image processor: %w", err)
	}
	pic := benchPicture()
	encode := func() ([]float32, [3]int, time.Duration, error) {
		start := time.Now()
		px, err := proc.Image(pic)
		if err != nil {
			return nil, [3]int{}, 0, err
		}
		embeds, err := m.EncodeImage(ctx, px)
		return embeds, m.ImageGrid(px), time.Since(start), err
	}
	// warm-up: the tower's weights read once, its plans made
	if _, _, _, err := encode(); err != nil {
		return fmt.Errorf("image encode: %w", err)
	}
	var enc, ttft []float64
	var grid [3]int
	tokens := vp.Tokens
	vocab := ck.Config.VocabSize
	for i := 0; i < opt.Repeats; i++ {
		opt.logf("image encode and prompt (%d/%d)", i+1, opt.Repeats)
		embeds, g, d, err := encode()
		if err != nil {
			return fmt.Errorf("image encode: %w", err)
		}
		if grid = g; tokens == 0 {
			tokens = g[0] * g[1] * g[2]
		}
		enc = append(enc, d.Seconds()*1000)
		p, err := mediaPrefill(ctx, m, vp.Begin, vp.Image, vp.End, tokens, embeds, grid, vocab, ImagePromptText)
		if err != nil {
			return fmt.Errorf("image prompt: %w", err)
		}
		ttft = append(ttft, (d+p).Seconds()*1000)
	}
	r.Image = &ImageReport{
		Width: pic.Width, Height: pic.Height, Tokens: tokens,
		PromptTokens: 2*ImagePromptText + tokens + 2,
		EncodeMs:     median(enc), TTFTMs: median(ttft),
	}
	if grid != ([3]int{}) {
		r.Image.Grid = grid[:]
	}
	r.Samples.ImageEncodeMs, r.Samples.ImageTTFTMs = enc, ttft
	return nil
}

// mediaPrefill runs the prefill of text words, begin, n × tok (their rows
// replaced by embeds: a picture's or a clip's soft tokens, laid out as
// grid where the tower gives one), end and text more words, up to the
// first token's argmax.
func mediaPrefill(ctx context.Context, m *engine.Model, begin, tok, end int32, n int, embeds []float32, grid [3]int, vocab, text int) (time.Duration, error) {
	words := prompt(2*text, vocab)
	ids := append([]int32{}, words[:text]...)
	ids = append(ids, begin)
	row := len(ids)
	for range n {
		ids = append(ids, tok)
	}
	ids = append(ids, end)
	ids = append(ids, words[text:]...)
	seq, err := m.NewSequence(len(ids) + 1)
	if err != nil {
		return 0, err
	}
	defer seq.Close()
	if err := seq.AddMedia(engine.Media{Pos: row, Embeds: embeds, Grid: grid}); err != nil {
		return 0, err
	}
	start := time.Now()
	logits, err := seq.Forward(ctx, ids, false)
	if err != nil {
		return 0, err
	}
	sample.Argmax(logits)
	return time.Since(start), nil
}

// ImageReport is the image measurement of a model with a vision tower.
type ImageReport struct {
	Width  int `json:"width"` // the picture, before the processor
	Height int `json:"height"`
	Tokens int `json:"tokens"` // soft tokens the tower makes
	// Grid is their (t, h, w) layout where it follows the picture
	// (Qwen-VL, Gemma 4), absent for a fixed count.
	Grid         []int `json:"grid,omitempty"`
	PromptTokens int   `json:"prompt_tokens"`
	// EncodeMs is the processor and the tower on one picture; TTFTMs
	// that plus the prefill of the prompt holding it.
	EncodeMs float64 `json:"encode_ms"`
	TTFTMs   float64 `json:"ttft_ms"`
}
