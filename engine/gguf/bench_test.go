package gguf_test

import (
	"bytes"
	"context"
	"testing"

	"hearth/engine"
	"hearth/engine/bench"
	"hearth/engine/gguf"
)

// TestGGUFBench: hearth bench --model file.gguf measures a GGUF file as it
// does a safetensors folder, counting the file's own bytes per token.
func TestGGUFBench(t *testing.T) {
	path := convert(t, "qwen3-f32", gguf.Q8_0).write(t, "tiny.gguf")
	var out bytes.Buffer
	rep, err := bench.Run(context.Background(), bench.Options{
		Model: path, Prompts: []int{4}, Decode: 3, Repeats: 1, BandwidthBytes: 1 << 20,
		Engine: engine.Options{Backend: "cpu"}, Concurrency: []int{2},
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.DecodeTokS <= 0 || rep.PrefillTokS["4"] <= 0 || rep.WeightBytes <= 0 || len(rep.Batched) != 2 || rep.Batched[0].Streams != 1 {
		t.Errorf("report %+v", rep)
	}
	t.Log(out.String())
}
