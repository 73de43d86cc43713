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
// language_model.model. (mlx-vlm). They carry no tower tensors: the
// engine runs Gemma 4's towers (engine/tower/gemma4vision, gemma4audio)
// and a partial tower fails the load (TestGemma4Vision* hold the tower).
func TestMultimodalLayout(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ entry, top, prefix, head string }{
		{"gemma4-f32", "gemma4", "model.language_model.", "lm_head"},
		{"gemma4_moe-q4g64", "gemma4", "language_model.model.", "language_model.lm_head"},
	} {
		e, ok := m.Find(tc.entry)
		if !ok {
			t.Fatalf("no manifest entry %s", tc.entry)
		}
		t.Run(tc.entry+"/"+strings.TrimSuffix(tc.prefix, "."), func(t *testing.T) {
			l := layout{top: tc.top, arch: "Gemma4ForConditionalGeneration", vision: map[string]any{"hidden_size": 8},
				prefix: tc.prefix, head: tc.head}
			dir := l.copyAs(t, e.Dir)
			checkDir(t, e, dir, engine.Options{Backend: "cpu"})
		})
	}
}
