package gguf_test

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"path/filepath"
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

// BenchmarkGGUFvsMLX measures one synthetic model (random weights with a
// real model's shapes, bench.Synthesize) stored two ways, in one process
// one after the other: the MLX q4g64 checkpoint and a Q4_0 GGUF file
// llama.cpp's converter would write from the same weights (through BF16,
// which the MLX quantizer does not round through: the values differ in
// their last bits). Set HEARTH_BENCH_SHAPE (default llama-3.2-1b) and
// HEARTH_BENCH_CACHE to keep the checkpoints between runs.
//
//	go test ./engine/gguf -run '^$' -bench GGUFvsMLX -benchtime 1x -timeout 60m
func BenchmarkGGUFvsMLX(b *testing.B) {
	shape := cmp.Or(os.Getenv("HEARTH_BENCH_SHAPE"), "llama-3.2-1b")
	cache := os.Getenv("HEARTH_BENCH_CACHE")
	if cache == "" {
		cache = b.TempDir()
	}
	dirs := map[string]string{}
	for _, q := range []string{"q4g64", "bf16"} {
		dirs[q] = filepath.Join(cache, shape+"-"+q)
		if err := bench.Synthesize(dirs[q], shape, q); err != nil {
			b.Fatal(err)
		}
	}
	ggufPath := filepath.Join(cache, shape+"-q4_0.gguf")
	if _, err := os.Stat(ggufPath); err != nil {
		c := convertDir(b, dirs["bf16"], gguf.Q4_0)
		tmp := c.write(b, "model.gguf")
		if err := os.Rename(tmp, ggufPath); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		rates := map[string]float64{}
		for _, m := range []struct{ name, path string }{{"mlx-q4g64", dirs["q4g64"]}, {"gguf-q4_0", ggufPath}} {
			var out bytes.Buffer
			rep, err := bench.Run(context.Background(), bench.Options{Model: m.path, Prompts: []int{128}, Decode: 32, Repeats: 2}, &out)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s:\n%s", m.name, out.String())
			rates[m.name] = rep.DecodeTokS
			b.ReportMetric(rep.DecodeTokS, m.name+"-decode-tok/s")
			b.ReportMetric(rep.PrefillTokS["128"], m.name+"-prefill-tok/s")
		}
		b.ReportMetric(rates["gguf-q4_0"]/rates["mlx-q4g64"], "gguf/mlx-decode")
	}
}
