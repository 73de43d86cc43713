package engine

import (
	"path/filepath"
	"slices"
	"testing"

	"hearth/engine/checkpoint"
	"hearth/engine/families"
	"hearth/internal/testmodels"
)

// TestVideoListedBeforeLoad holds families.TakesVideo, which the registry
// lists `video` from before a model loads, to the towers themselves: for
// each vision checkpoint, the loaded runner takes clips exactly where the
// model type is listed as taking them.
func TestVideoListedBeforeLoad(t *testing.T) {
	for _, entry := range []string{"gemma3_vision-f32", "qwen3_5_vision-f32", "qwen3_5_moe_vision-f32", "gemma4_vision-f32"} {
		dir := filepath.Join(testmodels.Root(), entry)
		ck, err := checkpoint.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(dir, RunnerOptions{Options: Options{Backend: "cpu"}})
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Contains(r.Info().Capabilities, "video")
		r.Close()
		if want := families.TakesVideo(ck.Config); got != want {
			t.Errorf("%s: the loaded model takes video %v, families.TakesVideo says %v", entry, got, want)
		}
	}
}
