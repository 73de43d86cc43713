// Package towertest reads the vision goldens under testdata/models (made
// by tools/oracle/make_vision_goldens.py), for the tests of every package
// that runs a tower: the tower's own outputs, and image prompts' logits
// and greedy ids.
package towertest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"hearth/internal/testmodels"
	"hearth/media"
)

// The vision entries' folder names.
const (
	Gemma3Entry = "gemma3_vision-f32"
	Qwen35Entry = "qwen3_5_vision-f32"
	// Qwen35MoeEntry is the MoE sibling's (make_qwen_moe_vision_goldens.py):
	// the same tower, a sparse decoder.
	Qwen35MoeEntry = "qwen3_5_moe_vision-f32"
	Gemma4Entry    = "gemma4_vision-f32"
)

// Golden is a vision entry's golden.json.
type Golden struct {
	Transformers string `json:"transformers"`
	Tolerance    struct {
		MaxAbsLogit float64 `json:"max_abs_logit"`
		MaxAbsTower float64 `json:"max_abs_tower"`
	} `json:"tolerance"`
	MMTokens int     `json:"mm_tokens_per_image"`
	Images   []Image `json:"images"`
	Cases    []Case  `json:"cases"`
}

// Image is one picture: its file, the processor's pixel values, the
// vision tower's last hidden state and the projector's output.
type Image struct {
	File         string    `json:"file"`
	Width        int       `json:"width"`
	Height       int       `json:"height"`
	PixelShape   []int     `json:"pixel_values_shape"`
	PixelValues  []float32 `json:"pixel_values"`
	Grid         [3]int    `json:"grid_thw"` // Qwen-VL's and Gemma 4's, in patches
	HiddenShape  []int     `json:"vision_last_hidden_state_shape"`
	Hidden       []float32 `json:"vision_last_hidden_state"`
	FeatureShape []int     `json:"image_features_shape"`
	Features     []float32 `json:"image_features"`
	// EncoderHead is Gemma 4's encoder output before the pooler, its
	// first values.
	EncoderHead []float32 `json:"encoder_head"`
}

// Pixels is the picture's pixel values as the tower takes them.
func (im Image) Pixels() media.Pixels {
	return media.Pixels{Data: im.PixelValues, Shape: im.PixelShape, Grid: im.Grid}
}

// Case is one conversation with pictures.
type Case struct {
	Name       string          `json:"name"`
	Images     []int           `json:"images"`
	Messages   json.RawMessage `json:"messages"`
	PromptText string          `json:"prompt_text"`
	PromptIDs  []int32         `json:"prompt_ids"`
	TokenTypes []int           `json:"token_type_ids"`
	// MMTokenTypes is Gemma 4's processor's mm_token_type_ids (1 on the
	// image soft tokens), read into TokenTypes where that is absent.
	MMTokenTypes []int `json:"mm_token_type_ids"`
	// PositionIDs are Qwen's get_rope_index streams (temporal, height,
	// width) over the prompt and the greedy ids.
	PositionIDs [3][]int32  `json:"position_ids"`
	GreedyIDs   []int32     `json:"greedy_ids"`
	Logits      [][]float32 `json:"logits"`
	MinMargin   float64     `json:"min_margin"`
}

// ImageRows are the rows where each picture's soft tokens start.
func (c Case) ImageRows() []int {
	var rows []int
	for i, t := range c.TokenTypes {
		if t == 1 && (i == 0 || c.TokenTypes[i-1] != 1) {
			rows = append(rows, i)
		}
	}
	return rows
}

// Dir is the entry's model folder.
func Dir(entry string) string { return filepath.Join(testmodels.Root(), entry) }

// Load reads the entry's golden.json.
func Load(entry string) (*Golden, error) {
	raw, err := os.ReadFile(filepath.Join(Dir(entry), "golden.json"))
	if err != nil {
		return nil, err
	}
	var g Golden
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("%s/golden.json: %w", entry, err)
	}
	for i := range g.Cases {
		if c := &g.Cases[i]; c.TokenTypes == nil {
			c.TokenTypes = c.MMTokenTypes
		}
	}
	return &g, nil
}
