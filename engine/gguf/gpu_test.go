package gguf_test

import (
	"testing"

	"hearth/engine/backend/gpu"
	"hearth/engine/gguf"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

// TestGGUFOnGPU: GGUF files (a mixture of experts among them, its stacked
// expert tensors repacked) run on the gpu backend (lavapipe in CI) as on
// the cpu: F32 files within the manifest's tolerance of transformers,
// quantized ones (each repacked family of block: Q8_0, Q4_0, Q5_1) of
// their own blocks decoded to F32, greedy ids exact.
func TestGGUFOnGPU(t *testing.T) {
	_, err := gpu.Probe()
	testenv.Need(t, "a gpu adapter", err == nil)
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"llama-f32", "qwen3-f32", "gemma-f32", "qwen2_moe-f32"} {
		for _, typ := range []gguf.GGMLType{gguf.F32, gguf.Q8_0, gguf.Q4_0, gguf.Q5_1} {
			t.Run(name+"/"+typ.String(), func(t *testing.T) {
				e, _ := man.Find(name)
				g, err := e.Golden()
				if err != nil {
					t.Fatal(err)
				}
				c := convert(t, name, typ)
				got, gotIDs := decodeOn(t, "gpu", c.write(t, name+".gguf"), g.PromptIDs, len(g.Logits))
				if typ == gguf.F32 {
					worst := compare(t, "vs transformers", got, g.Logits, gotIDs, g.GreedyIDs, e.Tolerance.MaxAbsLogit)
					t.Logf("max |Δlogit| vs transformers %.3g", worst)
					return
				}
				want, wantIDs := decodeOn(t, "gpu", c.dequantized(t).write(t, name+"-dequantized.gguf"), g.PromptIDs, len(g.Logits))
				worst := compare(t, "vs dequantized", got, want, gotIDs, wantIDs, 1e-4)
				t.Logf("max |Δlogit| vs the dequantized weights %.3g", worst)
			})
		}
	}
}
