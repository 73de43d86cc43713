package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// This file holds the synthetic checkpoints of the towers whose soft-token
// count follows the picture: Qwen 3.5's (engine/tower/qwenvl) and Gemma
// 4's (engine/tower/gemma4vision). Both are dense BF16, as Gemma 3's
// SigLIP (vision.go) is.

// writeProcessor writes the processor_config.json of a shape with a
// vision tower (nothing for one without).
func (s Shape) writeProcessor(dir string) error {
	var p map[string]any
	switch {
	case s.Gemma3 != nil:
		return s.writeGemma3Processor(dir)
	case s.Qwen35 != nil && s.Qwen35.Vision != nil:
		v := s.Qwen35.Vision
		// Qwen3VLProcessor's image processor as the Qwen 3.5 checkpoints
		// ship it: smart_resize within the pixel bounds, bicubic, mean and
		// std 0.5
		p = map[string]any{
			"processor_class": "Qwen3VLProcessor",
			"image_processor": map[string]any{
				"image_processor_type": "Qwen2VLImageProcessorFast",
				"do_convert_rgb":       true, "do_normalize": true, "do_rescale": true, "do_resize": true,
				"image_mean": []float64{0.5, 0.5, 0.5}, "image_std": []float64{0.5, 0.5, 0.5},
				"resample": 3, "rescale_factor": 1.0 / 255,
				"size":       map[string]int{"shortest_edge": v.MinPixels, "longest_edge": v.MaxPixels},
				"patch_size": v.PatchSize, "temporal_patch_size": v.Temporal, "merge_size": v.Merge,
			},
		}
	case s.Gemma4 != nil && s.Gemma4.Vision != nil:
		v := s.Gemma4.Vision
		// Gemma4Processor's image processor: the aspect-preserving resize
		// within max_soft_tokens·pooling² patches, bicubic, rescale only
		p = map[string]any{
			"processor_class":  "Gemma4Processor",
			"image_seq_length": v.MaxSoftTokens,
			"image_processor": map[string]any{
				"image_processor_type": "Gemma4ImageProcessor",
				"do_convert_rgb":       true, "do_normalize": false, "do_rescale": true, "do_resize": true,
				"image_mean": []float64{0, 0, 0}, "image_std": []float64{1, 1, 1},
				"resample": 3, "rescale_factor": 1.0 / 255,
				"max_soft_tokens": v.MaxSoftTokens, "patch_size": v.PatchSize, "pooling_kernel_size": v.Pool,
			},
		}
	default:
		return nil
	}
	raw, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "processor_config.json"), raw, 0o644)
}

// underLanguageModel moves a decoder's tensors from model. to
// model.language_model., where a ForConditionalGeneration checkpoint
// keeps them (lm_head stays at the top).
func underLanguageModel(shards [][]synthTensor) [][]synthTensor {
	for _, sh := range shards {
		for i := range sh {
			if rest, ok := strings.CutPrefix(sh[i].name, "model."); ok {
				sh[i].name = "model.language_model." + rest
			}
		}
	}
	return shards
}

// gemma4VisionConfig is the vision_config of a Gemma 4 shape with a
// vision tower, in Gemma4VisionConfig's keys.
func (s Shape) gemma4VisionConfig() map[string]any {
	v := s.Gemma4.Vision
	return map[string]any{
		"model_type":              "gemma4_vision",
		"hidden_size":             v.Hidden,
		"intermediate_size":       v.Intermediate,
		"num_hidden_layers":       v.Layers,
		"num_attention_heads":     v.Heads,
		"num_key_value_heads":     v.KVHeads,
		"head_dim":                v.HeadDim,
		"hidden_activation":       "gelu_pytorch_tanh",
		"rms_norm_eps":            1e-6,
		"pooling_kernel_size":     v.Pool,
		"patch_size":              v.PatchSize,
		"position_embedding_size": v.PosSize,
		"use_clipped_linears":     v.Clipped,
		"standardize":             v.Standardize,
		"rope_parameters":         map[string]any{"rope_type": "axial", "rope_theta": 100.0},
	}
}

// gemma4VisionShards are the vision tower's tensors under
// model.vision_tower. (one shard for the patch embedder, the
// standardization and the embedder under model.embed_vision., one per
// encoder layer), as transformers 5.17 saves them.
func (s Shape) gemma4VisionShards() [][]synthTensor {
	v, h, hd := s.Gemma4.Vision, s.Gemma4.Vision.Hidden, s.Gemma4.Vision.HeadDim
	p := "model.vision_tower."
	first := []synthTensor{
		dense(p+"patch_embedder.input_proj.weight", h, 3*v.PatchSize*v.PatchSize),
		dense(p+"patch_embedder.position_embedding_table", 2, v.PosSize, h),
		dense("model.embed_vision.embedding_projection.weight", s.HiddenSize, h),
	}
	if v.Standardize {
		first = append(first, vec(p+"std_bias", h, false), vec(p+"std_scale", h, true))
	}
	out := [][]synthTensor{first}
	linear := func(name string, rows, cols int) []synthTensor {
		if v.Clipped {
			return clippable(name, rows, cols)
		}
		return []synthTensor{dense(name+".linear.weight", rows, cols)}
	}
	for i := range v.Layers {
		lp := fmt.Sprintf("%sencoder.layers.%d.", p, i)
		at := lp + "self_attn."
		l := []synthTensor{
			vec(lp+"input_layernorm.weight", h, true),
			vec(lp+"post_attention_layernorm.weight", h, true),
			vec(lp+"pre_feedforward_layernorm.weight", h, true),
			vec(lp+"post_feedforward_layernorm.weight", h, true),
			vec(at+"q_norm.weight", hd, true),
			vec(at+"k_norm.weight", hd, true),
		}
		l = append(l, linear(at+"q_proj", v.Heads*hd, h)...)
		l = append(l, linear(at+"k_proj", v.KVHeads*hd, h)...)
		l = append(l, linear(at+"v_proj", v.KVHeads*hd, h)...)
		l = append(l, linear(at+"o_proj", h, v.Heads*hd)...)
		l = append(l, linear(lp+"mlp.gate_proj", v.Intermediate, h)...)
		l = append(l, linear(lp+"mlp.up_proj", v.Intermediate, h)...)
		l = append(l, linear(lp+"mlp.down_proj", h, v.Intermediate)...)
		out = append(out, l)
	}
	return out
}

// qwen35Text is the shape's text decoder alone (model_type qwen3_5_text).
func (s Shape) qwen35Text() Shape {
	d := *s.Qwen35
	d.Vision = nil
	s.ModelType, s.Qwen35 = "qwen3_5_text", &d
	return s
}

// qwen35VisionConfig is config.json of a synthetic Qwen 3.5 with its
// vision tower (Qwen3_5ForConditionalGeneration), in transformers 5.17's
// spelling: the decoder's keys under text_config (its rope with the
// mRoPE split), the tower's under vision_config.
func (s Shape) qwen35VisionConfig(q Quant) map[string]any {
	v := s.Qwen35.Vision
	text := s.qwen35Text().config(Quant{})
	delete(text, "architectures")
	rope := text["rope_parameters"].(map[string]any)
	rope["mrope_section"], rope["mrope_interleaved"] = v.MRopeSection[:], true
	c := map[string]any{
		"architectures": []string{"Qwen3_5ForConditionalGeneration"},
		"model_type":    "qwen3_5",
		"text_config":   text,
		"vision_config": map[string]any{
			"model_type":               "qwen3_5_vision",
			"depth":                    v.Depth,
			"hidden_size":              v.Hidden,
			"hidden_act":               "gelu_pytorch_tanh",
			"intermediate_size":        v.Intermediate,
			"num_heads":                v.Heads,
			"in_channels":              3,
			"patch_size":               v.PatchSize,
			"spatial_merge_size":       v.Merge,
			"temporal_patch_size":      v.Temporal,
			"out_hidden_size":          s.HiddenSize,
			"num_position_embeddings":  v.NumPos,
			"deepstack_visual_indexes": []int{},
			"rope_parameters":          map[string]any{"rope_type": "axial", "rope_theta": 10000.0},
		},
		"image_token_id":        v.Image,
		"video_token_id":        v.Video,
		"vision_start_token_id": v.Start,
		"vision_end_token_id":   v.End,
		"tie_word_embeddings":   s.TieWordEmbeddings,
		"torch_dtype":           "bfloat16",
	}
	if q.Bits > 0 {
		// the tower stays dense, as for Gemma 3's (gemma3Config)
		qc := map[string]any{"group_size": q.Group, "bits": q.Bits}
		c["quantization"] = qc
		c["quantization_config"] = qc
	}
	return c
}

// qwen35VisionShards are a Qwen3_5ForConditionalGeneration checkpoint as
// transformers 5.17 saves it: the decoder under model.language_model.,
// the tower under model.visual. (one shard for the patch embedding,
// position grid and merger, one per block), the conv3d in torch's
// [out, C, T, p, p] layout.
func (s Shape) qwen35VisionShards() [][]synthTensor {
	out := underLanguageModel(s.qwen35Text().qwen35Shards())
	v, h := s.Qwen35.Vision, s.Qwen35.Vision.Hidden
	mh := h * v.Merge * v.Merge
	p := "model.visual."
	withBias := func(name string, rows, cols int) []synthTensor {
		return []synthTensor{dense(name+".weight", rows, cols), vec(name+".bias", rows, false)}
	}
	norm := func(name string) []synthTensor {
		return []synthTensor{vec(name+".weight", h, true), vec(name+".bias", h, false)}
	}
	first := []synthTensor{
		dense(p+"patch_embed.proj.weight", h, 3, v.Temporal, v.PatchSize, v.PatchSize),
		vec(p+"patch_embed.proj.bias", h, false),
		dense(p+"pos_embed.weight", v.NumPos, h),
	}
	first = append(first, norm(p+"merger.norm")...)
	first = append(first, withBias(p+"merger.linear_fc1", mh, mh)...)
	first = append(first, withBias(p+"merger.linear_fc2", s.HiddenSize, mh)...)
	out = append(out, first)
	for i := range v.Depth {
		bp := fmt.Sprintf("%sblocks.%d.", p, i)
		var l []synthTensor
		l = append(l, norm(bp+"norm1")...)
		l = append(l, norm(bp+"norm2")...)
		l = append(l, withBias(bp+"attn.qkv", 3*h, h)...)
		l = append(l, withBias(bp+"attn.proj", h, h)...)
		l = append(l, withBias(bp+"mlp.linear_fc1", v.Intermediate, h)...)
		l = append(l, withBias(bp+"mlp.linear_fc2", h, v.Intermediate)...)
		out = append(out, l)
	}
	return out
}
