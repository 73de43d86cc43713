package gemma4

import (
	"os"
	"path/filepath"
	"testing"

	"hearth/engine/config"
	"hearth/internal/testmodels"
)

// FuzzSettings feeds config.json bytes through the Gemma 4 reading: a hub
// config is outside input, so any bytes must give settings or an error,
// never a panic, and accepted settings must describe every layer.
func FuzzSettings(f *testing.F) {
	for _, m := range []string{"gemma4-f32", "gemma4_kv-f32", "gemma4_moe-f32"} {
		raw, err := os.ReadFile(filepath.Join(testmodels.Root(), m, "config.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
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
