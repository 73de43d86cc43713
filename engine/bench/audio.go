package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"hearth/engine"
	"hearth/engine/checkpoint"
	"hearth/media"
)

// gemma4MultimodalConfig is config.json of a synthetic Gemma 4 with its
// towers (Gemma4ForConditionalGeneration), in transformers 5.17's
// spelling: the decoder's keys under text_config, the towers' under
// audio_config and vision_config (null for a tower it lacks).
func (s Shape) gemma4MultimodalConfig(q Quant) map[string]any {
	text := s.gemma4Text().config(Quant{})
	delete(text, "architectures")
	c := map[string]any{
		"architectures":       []string{"Gemma4ForConditionalGeneration"},
		"model_type":          "gemma4",
		"text_config":         text,
		"vision_config":       nil,
		"audio_config":        nil,
		"tie_word_embeddings": s.TieWordEmbeddings,
		"torch_dtype":         "bfloat16",
	}
	if a := s.Gemma4.Audio; a != nil {
		c["audio_config"] = map[string]any{
			"model_type":                     "gemma4_audio",
			"hidden_size":                    a.Hidden,
			"num_hidden_layers":              a.Layers,
			"num_attention_heads":            a.Heads,
			"hidden_act":                     "silu",
			"subsampling_conv_channels":      a.Channels,
			"conv_kernel_size":               a.ConvKernel,
			"residual_weight":                0.5,
			"attention_chunk_size":           a.Chunk,
			"attention_context_left":         a.ContextLeft,
			"attention_context_right":        a.ContextRight,
			"attention_logit_cap":            a.LogitCap,
			"attention_invalid_logits_value": -1e9,
			"use_clipped_linears":            true,
			"rms_norm_eps":                   1e-6,
			"gradient_clipping":              1e10,
			"output_proj_dims":               a.OutDims,
		}
		c["audio_token_id"], c["boa_token_id"], c["eoa_token_index"] = a.Token, a.BOA, a.EOA
	}
	if v := s.Gemma4.Vision; v != nil {
		c["vision_config"] = s.gemma4VisionConfig()
		c["boi_token_id"], c["eoi_token_id"], c["image_token_id"], c["video_token_id"] = v.BOI, v.EOI, v.Image, v.Video
		// the E-models' text_config: a picture's rows see each other on
		// the sliding layers
		text["use_bidirectional_attention"] = "vision"
	}
	if q.Bits > 0 {
		// the towers stay dense, as for Gemma 3's (gemma3Config)
		qc := map[string]any{"group_size": q.Group, "bits": q.Bits}
		c["quantization"] = qc
		c["quantization_config"] = qc
	}
	return c
}

// gemma4Text is the shape's text decoder alone (model_type gemma4_text).
func (s Shape) gemma4Text() Shape {
	g := *s.Gemma4
	g.Audio, g.Vision = nil, nil
	s.ModelType, s.Gemma4 = "gemma4_text", &g
	return s
}

// clipBound is the synthetic tower's clip bounds: finite, so the tower
// runs its Clamp ops (an absent or infinite bound runs none), and far
// beyond anything random weights produce.
const clipBound = 64

// clippable is a Gemma4ClippableLinear's tensors (the audio and vision
// towers'): its dense weight and its four scalar bounds.
func clippable(name string, rows, cols int) []synthTensor {
	t := []synthTensor{dense(name+".linear.weight", rows, cols)}
	for _, b := range []struct {
		name string
		v    float32
	}{{"input_min", -clipBound}, {"input_max", clipBound}, {"output_min", -clipBound}, {"output_max", clipBound}} {
		t = append(t, synthTensor{name: name + "." + b.name, rows: 1, dims: []int{}, fill: b.v, filled: true})
	}
	return t
}

// gemma4MultimodalShards are a Gemma4ForConditionalGeneration checkpoint
// as transformers 5.17 saves it: the decoder's tensors under
// model.language_model., then its towers' (gemma4AudioShards,
// gemma4VisionShards).
func (s Shape) gemma4MultimodalShards() [][]synthTensor {
	out := underLanguageModel(s.gemma4Text().gemma4Shards())
	if s.Gemma4.Audio != nil {
		out = append(out, s.gemma4AudioShards()...)
	}
	if s.Gemma4.Vision != nil {
		out = append(out, s.gemma4VisionShards()...)
	}
	return out
}

// gemma4AudioShards are the audio tower's tensors under
// model.audio_tower. (one shard for the subsampling and output, one per
// conformer layer) and the embedder's under model.embed_audio., all dense
// BF16, convolutions in torch's layout.
func (s Shape) gemma4AudioShards() [][]synthTensor {
	var out [][]synthTensor
	a, h := s.Gemma4.Audio, s.Gemma4.Audio.Hidden
	c0, c1 := a.Channels[0], a.Channels[1]
	p := "model.audio_tower."
	sub := p + "subsample_conv_projection."
	// the two stride-2, kernel-3, padding-1 convolutions halve the 128
	// mel bins twice
	halve := func(n int) int { return (n-1)/2 + 1 }
	f1 := halve(halve(128))
	out = append(out, []synthTensor{
		dense(sub+"layer0.conv.weight", c0, 1, 3, 3),
		vec(sub+"layer0.norm.weight", c0, true),
		dense(sub+"layer1.conv.weight", c1, c0, 3, 3),
		vec(sub+"layer1.norm.weight", c1, true),
		dense(sub+"input_proj_linear.weight", h, f1*c1),
		dense(p+"output_proj.weight", a.OutDims, h),
		vec(p+"output_proj.bias", a.OutDims, false),
		dense("model.embed_audio.embedding_projection.weight", s.HiddenSize, a.OutDims),
	})
	for i := range a.Layers {
		lp := fmt.Sprintf("%slayers.%d.", p, i)
		var l []synthTensor
		for _, ff := range []string{"feed_forward1.", "feed_forward2."} {
			l = append(l, vec(lp+ff+"pre_layer_norm.weight", h, true), vec(lp+ff+"post_layer_norm.weight", h, true))
			l = append(l, clippable(lp+ff+"ffw_layer_1", 4*h, h)...)
			l = append(l, clippable(lp+ff+"ffw_layer_2", h, 4*h)...)
		}
		at := lp + "self_attn."
		for _, n := range []string{"q_proj", "k_proj", "v_proj", "post"} {
			l = append(l, clippable(at+n, h, h)...)
		}
		l = append(l,
			dense(at+"relative_k_proj.weight", h, h),
			vec(at+"per_dim_scale", h/a.Heads, false),
			vec(lp+"norm_pre_attn.weight", h, true),
			vec(lp+"norm_post_attn.weight", h, true),
			vec(lp+"norm_out.weight", h, true),
			vec(lp+"lconv1d.pre_layer_norm.weight", h, true),
			vec(lp+"lconv1d.conv_norm.weight", h, true),
			dense(lp+"lconv1d.depthwise_conv1d.weight", h, 1, a.ConvKernel))
		l = append(l, clippable(lp+"lconv1d.linear_start", 2*h, h)...)
		l = append(l, clippable(lp+"lconv1d.linear_end", h, h)...)
		out = append(out, l)
	}
	return out
}

// The audio measurement's clip: 10 s at 48 kHz (a common capture rate,
// so the measurement includes resampling to the tower's 16 kHz, as it
// would for a recording).
const (
	AudioClipSeconds = 10
	AudioClipRate    = 48000
)

// benchClip is a synthetic voice-like clip: a tone gliding between 110
// and 220 Hz with its first harmonics, cut into syllables of about a
// fifth of a second, over faint deterministic noise.
func benchClip() media.Audio {
	n := AudioClipSeconds * AudioClipRate
	a := media.Audio{Rate: AudioClipRate, Samples: make([]float32, n)}
	var phase float64
	x := uint32(2463534242)
	for i := range a.Samples {
		t := float64(i) / AudioClipRate
		f := 165 + 55*math.Sin(2*math.Pi*0.3*t)
		phase += 2 * math.Pi * f / AudioClipRate
		env := 0.5 - 0.5*math.Cos(2*math.Pi*5*t)
		v := env * (0.5*math.Sin(phase) + 0.25*math.Sin(2*phase) + 0.12*math.Sin(3*phase))
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		a.Samples[i] = float32(0.6*v + 0.01*(float64(x)/(1<<32)-0.5))
	}
	return a
}

// AudioPromptText is the text around the clip in the audio-prompt
// measurement: tokens before it and after it.
const AudioPromptText = ImagePromptText

// measureAudio times, for a model with an audio tower, on one clip: the
// resampling and feature extraction, the tower, and the time to first
// token of a prompt holding the clip between AudioPromptText tokens of
// text on each side (extraction, tower and prefill).
func (r *Report) measureAudio(ctx context.Context, m *engine.Model, ck *checkpoint.Checkpoint, opt Options) error {
	ap, ok := m.AudioPrompt()
	if !ok {
		return nil
	}
	clip := benchClip()
	encode := func() (engine.Heard, []float32, time.Duration, time.Duration, error) {
		start := time.Now()
		h, err := m.Hear(clip)
		if err != nil {
			return h, nil, 0, 0, err
		}
		extract := time.Since(start)
		start = time.Now()
		embeds, err := m.EncodeAudio(ctx, h.Features)
		return h, embeds, extract, time.Since(start), err
	}
	// warm-up: the tower's weights read once, its plans made
	if _, _, _, _, err := encode(); err != nil {
		return fmt.Errorf("audio encode: %w", err)
	}
	var ext, tow, ttft []float64
	var heard engine.Heard
	vocab := ck.Config.VocabSize
	for i := 0; i < opt.Repeats; i++ {
		opt.logf("audio encode and prompt (%d/%d)", i+1, opt.Repeats)
		h, embeds, e, t, err := encode()
		if err != nil {
			return fmt.Errorf("audio encode: %w", err)
		}
		heard = h
		ext, tow = append(ext, e.Seconds()*1000), append(tow, t.Seconds()*1000)
		p, err := mediaPrefill(ctx, m, ap.Begin, ap.Image, ap.End, h.Tokens, embeds, [3]int{}, vocab, AudioPromptText)
		if err != nil {
			return fmt.Errorf("audio prompt: %w", err)
		}
		ttft = append(ttft, (e+t+p).Seconds()*1000)
	}
	secs := min(float64(AudioClipSeconds), m.AudioSeconds())
	r.Audio = &AudioReport{
		Seconds: secs, Rate: AudioClipRate, Tokens: heard.Tokens,
		PromptTokens: 2*AudioPromptText + heard.Tokens + 2,
		ExtractMs:    median(ext), TowerMs: median(tow), TowerMsPerSecond: median(tow) / secs, TTFTMs: median(ttft),
	}
	r.Samples.AudioExtractMs, r.Samples.AudioTowerMs, r.Samples.AudioTTFTMs = ext, tow, ttft
	return nil
}

// AudioReport is the audio measurement of a model with an audio tower.
type AudioReport struct {
	Seconds      float64 `json:"seconds"` // the clip the tower hears
	Rate         int     `json:"rate"`    // its sampling rate, before resampling
	Tokens       int     `json:"tokens"`  // soft tokens the tower makes
	PromptTokens int     `json:"prompt_tokens"`
	// ExtractMs is resampling the clip to the tower's rate and its
	// feature extraction; TowerMs the tower and projector over the
	// features (TowerMsPerSecond per second of audio); TTFTMs both plus
	// the prefill of the prompt holding the clip.
	ExtractMs        float64 `json:"extract_ms"`
	TowerMs          float64 `json:"tower_ms"`
	TowerMsPerSecond float64 `json:"tower_ms_per_audio_s"`
	TTFTMs           float64 `json:"ttft_ms"`
}
