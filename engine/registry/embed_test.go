package registry

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"hearth/internal/testmodels"
)

// TestEmbeddingsCapability: a generic-tier checkpoint with readable
// sentence-transformers pooling files lists embeddings; broken or absent
// files do not (and the model still lists as servable).
func TestEmbeddingsCapability(t *testing.T) {
	dir := testmodels.EmbedDir(t, "lasttoken")
	rec := classify(dir, "qwen3_embed-f32", "", nil, nil)
	if !rec.Servable() || !slices.Contains(rec.Capabilities, "embeddings") {
		t.Fatalf("tier %q reason %q capabilities %v", rec.Tier, rec.Reason, rec.Capabilities)
	}
	os.WriteFile(filepath.Join(dir, "1_Pooling", "config.json"), []byte(`{"pooling_mode_lasttoken": true, "pooling_mode_mean_tokens": true}`), 0o644)
	if rec := classify(dir, "qwen3_embed-f32", "", nil, nil); !rec.Servable() || slices.Contains(rec.Capabilities, "embeddings") {
		t.Errorf("two pooling modes: servable %v, capabilities %v", rec.Servable(), rec.Capabilities)
	}
	os.Remove(filepath.Join(dir, "modules.json"))
	if rec := classify(dir, "qwen3_embed-f32", "", nil, nil); slices.Contains(rec.Capabilities, "embeddings") {
		t.Errorf("no modules.json: capabilities %v", rec.Capabilities)
	}
}
