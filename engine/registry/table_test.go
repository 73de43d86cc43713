package registry

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"hearth/engine/fit"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update and review the diff)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// qwen3_8B4bit is the shape of mlx-community/Qwen3-8B-4bit: 36 layers,
// 8 KV heads of 128, 4.6 GB of weights.
var qwen3_8B4bit = fit.Shape{
	WeightBytes: 4_610_000_000, Hidden: 4096, QDim: 4096, Intermediate: 12288, Vocab: 151936,
	MaxContextTokens: 40960, Layers: repeatLayer(fit.Layer{Kind: fit.Full, KVHeads: 8, HeadDim: 128}, 36),
}

func repeatLayer(l fit.Layer, n int) []fit.Layer {
	out := make([]fit.Layer, n)
	for i := range out {
		out[i] = l
	}
	return out
}

// tableRecords covers every kind of row `hearth ls` prints. They are
// built by hand, not classified from disk, so the golden does not move
// when a testdata model is regenerated (TestList covers classification).
func tableRecords() []Record {
	tiny := fit.Shape{WeightBytes: 560_488, Hidden: 64, QDim: 128, Intermediate: 128, Vocab: 512, MaxContextTokens: 256,
		Layers: repeatLayer(fit.Layer{Kind: fit.Full, KVHeads: 2, HeadDim: 32}, 2)}
	unsupported := errors.New(`unsupported model: unsupported model_type "rwkv7" (supported: llama, mistral, qwen2, qwen3)`)
	return []Record{
		{ID: "mlx-community/Qwen3-8B-4bit", Revision: commit("c"), Refs: []string{"main"}, ModelType: "qwen3", Family: "universal",
			Tier: TierGeneric, Params: 8_190_735_360, Bytes: qwen3_8B4bit.WeightBytes, Quantization: "q4g64", ContextTokens: 40960,
			Shape: qwen3_8B4bit, Capabilities: []string{"tools"}},
		{ID: "meta-llama/Llama-Tiny", Revision: commit("d"), Refs: []string{"main", "v1"}, ModelType: "llama", Family: "universal",
			Tier: TierGeneric, Params: 140_096, Bytes: tiny.WeightBytes, Quantization: "f32", ContextTokens: 256, Shape: tiny, Capabilities: []string{}},
		{ID: "meta-llama/Llama-Tiny", Revision: commit("b"), Refs: []string{"v0"}, ModelType: "llama", Family: "universal",
			Tier: TierGeneric, Params: 140_096, Bytes: tiny.WeightBytes / 2, Quantization: "bf16", ContextTokens: 256, Shape: tiny, Capabilities: []string{}},
		{ID: "meta-llama/Llama-Tiny", Revision: commit("0"), ModelType: "llama", Family: "universal",
			Tier: TierGeneric, Params: 140_096, Bytes: tiny.WeightBytes / 2, Quantization: "bf16", ContextTokens: 256, Shape: tiny, Capabilities: []string{}},
		{ID: "/Users/me/models/gemma-tiny", ModelType: "gemma4", Family: "gemma4", Tier: TierTargeted, Params: 140_096,
			Bytes: tiny.WeightBytes, Quantization: "q4g64", ContextTokens: 131072, Shape: tiny, Capabilities: []string{"audio", "tools", "vision"}},
		{ID: "RWKV/rwkv7-tiny", Revision: commit("1"), Refs: []string{"main"}, ModelType: "rwkv7", Tier: TierUnsupported,
			Reason: unsupported.Error(), err: unsupported, Params: 140_096, Bytes: tiny.WeightBytes, Quantization: "bf16", ContextTokens: 4096},
		{ID: "acme/Broken", Revision: commit("2"), Refs: []string{"main"}, Tier: TierUnsupported,
			Reason: "no config.json (not a model directory, or an incomplete download; run hearth pull again)", err: errors.New("no config.json")},
		{ID: "google/gemma-tiny_assistant", Revision: commit("5"), Refs: []string{"main"}, ModelType: "llama", Family: "universal",
			Tier: TierGeneric, Params: 140_096, Bytes: tiny.WeightBytes, Quantization: "f32", ContextTokens: 256, Shape: tiny, Drafter: true},
	}
}

func TestTableGolden(t *testing.T) {
	recs := tableRecords()
	// A 16 GB machine with 9 GB free, at the default context (8192 or
	// the model's own when shorter) and at 32768.
	mem := fit.Memory{TotalBytes: 16e9, AvailableBytes: 9e9}
	var buf bytes.Buffer
	for _, ctx := range []int{0, 32768} {
		fmt.Fprintf(&buf, "# context %d\n", ctx)
		if err := Table(&buf, recs, FitAt(mem, ctx)); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString("# no fit column\n")
	if err := Table(&buf, recs[:2], nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "ls.golden", buf.Bytes())
}

func TestFormatting(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{FormatParams(596_049_920), "596M"},
		{FormatParams(8_190_735_360), "8.2B"},
		{FormatParams(150_000), "150K"},
		{FormatParams(0), "-"},
		{ctxLabel(40960), "40K"},
		{ctxLabel(8192), "8K"},
		{ctxLabel(256), "256"},
		{ctxLabel(1500), "1500"},
		{ctxLabel(0), "-"},
		{size(4_610_000_000), "4.6 GB"},
		{size(560_488), "560.5 kB"},
		{size(0), "-"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
