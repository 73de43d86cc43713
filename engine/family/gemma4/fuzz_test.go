package gemma4

import (
	"testing"

	"hearth/engine/config"
	"hearth/internal/testmodels"
)

// FuzzSettings feeds config.json bytes through the Gemma 4 reading: a hub
// config is outside input, so any bytes must give settings or an error,
// never a panic, and accepted settings must describe every layer.
func FuzzSettings(f *testing.F) {
	testmodels.SeedConfigs(f, []string{"gemma4-f32", "gemma4_kv-f32", "gemma4_moe-f32"})
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := config.Parse(raw, nil)
		if err != nil {
			return
		}
		s, err := readSettings(c)
		if err != nil {
			return
		}
		if len(s.headDim) != c.NumHiddenLayers || len(s.kvHeads) != c.NumHiddenLayers {
			t.Fatalf("%d layers, settings for %d", c.NumHiddenLayers, len(s.headDim))
		}
		if _, err := cacheLayers(c); err != nil {
			return
		}
	})
}
