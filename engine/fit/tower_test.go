package fit_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/checkpoint"
	"hearth/engine/families"
	"hearth/engine/fit"
	"hearth/internal/testmodels"
)

// TestTowerWeightsCounted: a multimodal checkpoint's estimate counts its
// vision tower's weights (they are in the safetensors headers the
// estimate reads), beside the decoder's.
func TestTowerWeightsCounted(t *testing.T) {
	dir := filepath.Join(testmodels.Root(), "gemma3_vision-f32")
	ck, err := checkpoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tower, all int64
	for _, tn := range ck.Weights.Tensors {
		all += tn.Length
		if strings.Contains(tn.Name, "vision_tower.") || strings.Contains(tn.Name, "multi_modal_projector.") {
			tower += tn.Length
		}
	}
	if tower == 0 {
		t.Fatal("no tower tensors in the checkpoint")
	}
	st, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	s := families.Shape(ck.Config, ck.Weights.Bytes)
	if s.WeightBytes != all || all > st.Size() {
		t.Fatalf("weight bytes %d, tensors %d (tower %d), file %d", s.WeightBytes, all, tower, st.Size())
	}
	if b := fit.Estimate(s, fit.Options{}); b.WeightBytes != all {
		t.Fatalf("estimate's weights %d, want %d", b.WeightBytes, all)
	}
}
