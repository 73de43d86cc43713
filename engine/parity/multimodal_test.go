package parity

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/tensor"
	"hearth/internal/testmodels"
)

// TestMultimodalLayout holds the flagship families to their goldens in the
// shape their real checkpoints ship: the conditional-generation config
// (top model_type with the text model under text_config) and the text
// decoder's tensors under model.language_model. (transformers 5) or
// language_model.model. (mlx-vlm), beside a vision tower the text port
// leaves alone.
func TestMultimodalLayout(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ entry, top, prefix, head, tower string }{
		{"gemma4-f32", "gemma4", "model.language_model.", "lm_head", "model.vision_tower.patch_embedder.input_proj.weight"},
		{"gemma4_moe-q4g64", "gemma4", "language_model.model.", "language_model.lm_head", "vision_tower.encoder.layers.0.mlp.up_proj.weight"},
	} {
		e, ok := m.Find(tc.entry)
		if !ok {
			t.Fatalf("no manifest entry %s", tc.entry)
		}
		t.Run(tc.entry+"/"+strings.TrimSuffix(tc.prefix, "."), func(t *testing.T) {
			dir := testmodels.Copy(t, e.Dir)
			raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var text map[string]any
			if err := json.Unmarshal(raw, &text); err != nil {
				t.Fatal(err)
			}
			wrapped, _ := json.Marshal(map[string]any{
				"model_type": tc.top, "architectures": []string{"Gemma4ForConditionalGeneration"},
				"text_config": text, "vision_config": map[string]any{"hidden_size": 8},
				"tie_word_embeddings": text["tie_word_embeddings"],
			})
			if err := os.WriteFile(filepath.Join(dir, "config.json"), wrapped, 0o644); err != nil {
				t.Fatal(err)
			}
			testmodels.Rewrite(t, dir, func(ws []tensor.Weight) []tensor.Weight {
				for i := range ws {
					if name, ok := strings.CutPrefix(ws[i].Name, "model."); ok {
						ws[i].Name = tc.prefix + name
					} else if name, ok := strings.CutPrefix(ws[i].Name, "lm_head."); ok {
						ws[i].Name = tc.head + "." + name
					}
				}
				tower := tensor.Weight{Name: tc.tower, DType: tensor.F32, Shape: []int{2, 2}, Data: make([]byte, 16)}
				return append(ws, tower)
			})
			checkDir(t, e, dir, engine.Options{Backend: "cpu"})
		})
	}
}
