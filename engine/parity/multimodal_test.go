package parity

import (
	"strings"
	"testing"

	"hearth/engine"
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
			l := layout{top: tc.top, arch: "Gemma4ForConditionalGeneration", vision: map[string]any{"hidden_size": 8},
				prefix: tc.prefix, head: tc.head, extra: []string{tc.tower}}
			dir := l.copyAs(t, e.Dir)
			checkDir(t, e, dir, engine.Options{Backend: "cpu"})
		})
	}
}
