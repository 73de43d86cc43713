package qwen35

import (
	"path/filepath"
	"testing"

	"hearth/engine/config"
	"hearth/internal/testmodels"
)

// FuzzSettings feeds config.json bytes through the Qwen 3.5 reading: a hub
// config is outside input, so any bytes must give settings or an error,
// never a panic, and accepted settings must describe every layer, with
// caches and parameter counts that are not negative.
func FuzzSettings(f *testing.F) {
	testmodels.SeedConfigs(f, []string{"qwen3_5-f32", "qwen3_5_moe-q4g64"}, filepath.Join("testdata", "configs", "*.json"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := config.Parse(raw, nil)
		if err != nil {
			return
		}
		s, err := readSettings(c)
		if err != nil {
			return
		}
		if len(s.linear) != c.NumHiddenLayers {
			t.Fatalf("%d layers, settings for %d", c.NumHiddenLayers, len(s.linear))
		}
		layers, err := cacheLayers(c)
		if err != nil || len(layers) != c.NumHiddenLayers {
			t.Fatalf("cache layers %d, %v for %d layers", len(layers), err, c.NumHiddenLayers)
		}
		for i, l := range layers {
			if l.StateBytes < 0 {
				t.Fatalf("layer %d: %+v", i, l)
			}
		}
		if _, _, err := ParamCount(c); err != nil {
			t.Fatalf("ParamCount: %v after readSettings accepted the config", err)
		}
	})
}
