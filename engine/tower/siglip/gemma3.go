package siglip

import (
	"encoding/json"
	"fmt"
	"math"

	"hearth/engine/config"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower"
	"hearth/media"
)

// Gemma3 is Gemma 3's vision tower: SigLIP, then Gemma3MultiModalProjector
// (average pool of the patch grid down to mm_tokens_per_image tokens,
// RMSNorm with Gemma's (1 + w), times mm_input_projection_weight).
type Gemma3 struct {
	tower  *Tower
	norm   nn.RMSNorm
	proj   tensor.T // mm_input_projection_weight transposed: [text hidden, vision hidden]
	side   int      // pooled tokens per side
	kernel int      // patches per pooled token, per side
	prompt tower.Prompt
}

// gemma3Config is what Gemma3Config adds around its two models, with its
// defaults.
type gemma3Config struct {
	Vision   json.RawMessage `json:"vision_config"`
	MMTokens int             `json:"mm_tokens_per_image"`
	BOI      int32           `json:"boi_token_index"`
	EOI      int32           `json:"eoi_token_index"`
	Image    int32           `json:"image_token_index"`
	ImageAlt *int32          `json:"image_token_id"`
}

// Prefixes of the vision model and, at the same index, the projector:
// transformers 5.17's save_pretrained (SiglipVisionModel's modules straight
// under vision_tower.), the hub's older saves and mlx-vlm's (under
// vision_tower.vision_model.), and both with transformers 5's in-memory
// model. prefix.
var (
	towerPrefixes = []string{"vision_tower.", "vision_tower.vision_model.",
		"model.vision_tower.", "model.vision_tower.vision_model."}
	projectorPrefixes = []string{"multi_modal_projector.", "multi_modal_projector.",
		"model.multi_modal_projector.", "model.multi_modal_projector."}
)

// LoadGemma3 binds Gemma 3's vision tower and projector from a checkpoint
// whose config.json is raw and whose decoder config is c.
func LoadGemma3(raw []byte, c *config.Config, l *nn.Loader) (tower.Vision, error) {
	gc := gemma3Config{MMTokens: 256, BOI: 255999, EOI: 256000, Image: 262144}
	if err := json.Unmarshal(raw, &gc); err != nil {
		return nil, fmt.Errorf("gemma3 vision: config.json: %w", err)
	}
	if gc.ImageAlt != nil {
		gc.Image = *gc.ImageAlt
	}
	vc, err := ParseConfig(gc.Vision)
	if err != nil {
		return nil, fmt.Errorf("gemma3 vision: %w", err)
	}
	side := int(math.Round(math.Sqrt(float64(gc.MMTokens))))
	patches := vc.Side()
	if gc.MMTokens <= 0 || side*side != gc.MMTokens || patches%side != 0 {
		return nil, fmt.Errorf("gemma3 vision: mm_tokens_per_image %d is not a square that divides the %d×%d patch grid", gc.MMTokens, patches, patches)
	}
	for _, id := range []int32{gc.BOI, gc.EOI, gc.Image} {
		if id < 0 || int(id) >= c.VocabSize {
			return nil, fmt.Errorf("gemma3 vision: special token %d is outside the vocabulary of %d", id, c.VocabSize)
		}
	}
	tp, pp := towerPrefixes[0], projectorPrefixes[0]
	for i, p := range towerPrefixes {
		if l.W.Has(p + "embeddings.patch_embedding.weight") {
			tp, pp = p, projectorPrefixes[i]
			break
		}
	}
	for _, p := range projectorPrefixes {
		if !l.W.Has(pp+"mm_input_projection_weight") && l.W.Has(p+"mm_input_projection_weight") {
			pp = p
		}
	}
	t, err := Bind(l, tp, vc)
	if err != nil {
		return nil, fmt.Errorf("gemma3 vision: %w", err)
	}
	m := &Gemma3{tower: t, side: side, kernel: patches / side,
		prompt: tower.Prompt{Placeholder: gc.BOI, Begin: gc.BOI, End: gc.EOI, Image: gc.Image, Tokens: gc.MMTokens, Before: "\n\n", After: "\n\n"}}
	m.norm = nn.RMSNorm{W: l.Tensor(pp+"mm_soft_emb_norm.weight", vc.Hidden), Eps: float32(vc.Eps), Shift: 1}
	w := l.W.Tensor(pp + "mm_input_projection_weight")
	if w.Data != nil {
		if w, err = transpose(l, w, vc.Hidden, c.HiddenSize); err != nil {
			return nil, fmt.Errorf("gemma3 vision: %w", err)
		}
	}
	m.proj = l.Weight(w, c.HiddenSize, vc.Hidden)
	return m, l.Err()
}

// transpose turns the dense matrix w [rows, cols] into [cols, rows]: the
// projector multiplies x·W, MatMul takes x·Wᵀ.
func transpose(l *nn.Loader, w tensor.Weight, rows, cols int) (tensor.Weight, error) {
	if len(w.Shape) != 2 || w.Shape[0] != rows || w.Shape[1] != cols {
		return w, fmt.Errorf("tensor %q has shape %v, want [%d, %d]", w.Name, w.Shape, rows, cols)
	}
	size := w.DType.Size()
	switch w.DType {
	case tensor.F32, tensor.F16, tensor.BF16:
	default:
		return w, fmt.Errorf("tensor %q has dtype %s; it must be F32, F16 or BF16", w.Name, w.DType)
	}
	if len(w.Data) != rows*cols*size {
		return w, fmt.Errorf("tensor %q holds %d bytes for [%d, %d] %s", w.Name, len(w.Data), rows, cols, w.DType)
	}
	out, err := l.W.Alloc(len(w.Data))
	if err != nil {
		return w, err
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			copy(out[(c*rows+r)*size:(c*rows+r+1)*size], w.Data[(r*cols+c)*size:])
		}
	}
	return tensor.Weight{Name: w.Name, DType: w.DType, Shape: []int{cols, rows}, Data: out}, nil
}

// Encode records the tower and the projector over one picture:
// [mm_tokens_per_image, text hidden].
func (m *Gemma3) Encode(g *tensor.Graph, px media.Pixels) (tensor.T, error) {
	h, err := m.tower.Forward(g, px)
	if err != nil {
		return tensor.T{}, err
	}
	p := m.tower.c.Side()
	x := g.AvgPool2d(h, p, p, m.kernel)
	x = m.norm.Forward(g, x)
	return g.MatMul(x, m.proj), g.Err()
}

// Tower is the SigLIP model under the projector.
func (m *Gemma3) Tower() *Tower { return m.tower }

// Prompt is Gemma3Processor's: each <start_of_image> the chat template
// writes becomes "\n\n<start_of_image>" + mm_tokens_per_image ×
// <image_soft_token> + "<end_of_image>\n\n".
func (m *Gemma3) Prompt() tower.Prompt { return m.prompt }
