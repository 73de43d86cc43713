package fit_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/checkpoint"
	"hearth/engine/fit"
	"hearth/internal/testmodels"
)

func layers(l fit.Layer, n int) []fit.Layer {
	out := make([]fit.Layer, n)
	for i := range out {
		out[i] = l
	}
	return out
}

// qwen3_8B is mlx-community/Qwen3-8B-4bit: 36 layers, 8 KV heads of 128.
var qwen3_8B = fit.Shape{
	WeightBytes: 4_610_000_000, Hidden: 4096, QDim: 4096, Intermediate: 12288, Vocab: 151936,
	MaxContextTokens: 40960, Layers: layers(fit.Layer{Kind: fit.Full, KVHeads: 8, HeadDim: 128}, 36),
}

func TestKVBytes(t *testing.T) {
	full := fit.Layer{Kind: fit.Full, KVHeads: 8, HeadDim: 128}
	sliding := fit.Layer{Kind: fit.Sliding, KVHeads: 8, HeadDim: 128, Window: 1024}
	recurrent := fit.Layer{Kind: fit.Recurrent, StateBytes: 3 << 20}
	perToken := int64(2 * 8 * 128 * 4) // K and V, float32
	tests := []struct {
		name    string
		layers  []fit.Layer
		ctx     int
		kvBytes int
		want    int64
	}{
		{"full grows with the context", []fit.Layer{full}, 4096, 0, perToken * 4096},
		{"full at twice the context", []fit.Layer{full}, 8192, 0, perToken * 8192},
		{"bf16 cache", []fit.Layer{full}, 4096, 2, perToken / 2 * 4096},
		{"sliding below its window", []fit.Layer{sliding}, 512, 0, perToken * 512},
		{"sliding caps at window plus a chunk", []fit.Layer{sliding}, 32768, 0, perToken * (1024 + 512)},
		{"recurrent is constant", []fit.Layer{recurrent}, 32768, 0, 3 << 20},
		{"mixed", []fit.Layer{full, sliding, sliding, recurrent}, 8192, 0, perToken*8192 + 2*perToken*1536 + 3<<20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fit.Shape{Layers: tt.layers, Hidden: 1024, QDim: 1024, Intermediate: 4096, Vocab: 1000}
			got := fit.Estimate(s, fit.Options{ContextTokens: tt.ctx, KVBytes: tt.kvBytes}).KVBytes
			if got != tt.want {
				t.Errorf("KVBytes = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestEstimateTerms(t *testing.T) {
	b := fit.Estimate(qwen3_8B, fit.Options{ContextTokens: 32768})
	if b.WeightBytes != qwen3_8B.WeightBytes || b.ContextTokens != 32768 || b.OverheadBytes != fit.DefaultOverheadBytes {
		t.Errorf("breakdown %+v", b)
	}
	if want := int64(36 * 2 * 8 * 128 * 4 * 32768); b.KVBytes != want {
		t.Errorf("KVBytes = %d, want %d", b.KVBytes, want)
	}
	if b.GCBytes != b.KVBytes+b.WorkBytes {
		t.Errorf("GCBytes = %d, want the live heap %d at GOGC=100", b.GCBytes, b.KVBytes+b.WorkBytes)
	}
	if b.Total() != b.WeightBytes+b.KVBytes+b.WorkBytes+b.GCBytes+b.OverheadBytes {
		t.Errorf("Total %d is not the sum of %+v", b.Total(), b)
	}
	if off := fit.Estimate(qwen3_8B, fit.Options{ContextTokens: 32768, GCPercent: -1}); off.GCBytes != 0 || off.HeapBytes() != b.KVBytes+b.WorkBytes+b.OverheadBytes {
		t.Errorf("with GCPercent -1: %+v, heap %d", off, off.HeapBytes())
	}
	// The working buffers scale with the chunk, not with the context.
	small := fit.Estimate(qwen3_8B, fit.Options{ContextTokens: 32768, ChunkTokens: 128})
	if small.WorkBytes >= b.WorkBytes || fit.Estimate(qwen3_8B, fit.Options{ContextTokens: 8192}).WorkBytes != b.WorkBytes {
		t.Errorf("work at chunk 128 = %d, at 512 = %d", small.WorkBytes, b.WorkBytes)
	}
	if d := fit.Estimate(qwen3_8B, fit.Options{}); d.ContextTokens != qwen3_8B.MaxContextTokens {
		t.Errorf("default context %d, want the model's %d", d.ContextTokens, qwen3_8B.MaxContextTokens)
	}
}

func TestFromConfig(t *testing.T) {
	tests := []struct {
		model   string
		kinds   string
		window  int
		kvHeads int
	}{
		{"gemma3-f32", "sliding sliding full", 6, 0},
		{"gemma2-f32", "sliding full sliding", 6, 0},
		{"qwen2-f32", "full full", 0, 0},
		{"llama-f32", "full full", 0, 0},
		// linear_attention layers hold a state whose size the family
		// gives (families.Shape); FromConfig counts no keys for them
		{"qwen3_5-f32", "recurrent recurrent recurrent full", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			ck, err := checkpoint.Read(filepath.Join(testmodels.Root(), tt.model))
			if err != nil {
				t.Fatal(err)
			}
			c := ck.Config
			s := fit.FromConfig(c, 12345)
			var kinds []string
			for _, l := range s.Layers {
				kinds = append(kinds, l.Kind.String())
				if l.Kind == fit.Sliding && l.Window != tt.window {
					t.Errorf("window %d, want %d", l.Window, tt.window)
				}
				if l.Kind != fit.Recurrent && (l.KVHeads != c.NumKeyValueHeads || l.HeadDim != c.HeadDim) {
					t.Errorf("layer %+v, want %d KV heads of %d", l, c.NumKeyValueHeads, c.HeadDim)
				}
			}
			if got := strings.Join(kinds, " "); got != tt.kinds {
				t.Errorf("layer kinds %q, want %q", got, tt.kinds)
			}
			if s.WeightBytes != 12345 || s.Hidden != c.HiddenSize || s.QDim != c.QDim() || s.Vocab != c.VocabSize || s.MaxContextTokens != c.MaxPositionEmbeddings {
				t.Errorf("shape %+v does not match the config", s)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	const gb = 1_000_000_000
	need8K := fit.Estimate(qwen3_8B, fit.Options{ContextTokens: 8192}).Total()
	tests := []struct {
		name   string
		mem    fit.Memory
		ctx    int
		status fit.Status
	}{
		{"plenty", fit.Memory{TotalBytes: 64 * gb, AvailableBytes: 48 * gb}, 8192, fit.Fits},
		{"fits with 10% to spare", fit.Memory{TotalBytes: 64 * gb, AvailableBytes: need8K*10/9 + 10}, 8192, fit.Fits},
		{"tight: within the budget, not in free memory", fit.Memory{TotalBytes: 64 * gb, AvailableBytes: need8K}, 8192, fit.Tight},
		{"won't fit at 40K on 16 GB", fit.Memory{TotalBytes: 16 * gb, AvailableBytes: 12 * gb}, 40960, fit.WontFit},
		{"the working set caps the budget", fit.Memory{TotalBytes: 64 * gb, AvailableBytes: 48 * gb, WorkingSetBytes: need8K - 1}, 8192, fit.WontFit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := fit.Check(qwen3_8B, fit.Options{ContextTokens: tt.ctx}, tt.mem)
			if v.Status != tt.status {
				t.Errorf("status %q (need %d, available %d, budget %d), want %q", v.Status, v.NeedBytes, v.AvailableBytes, v.BudgetBytes, tt.status)
			}
			if v.ContextTokens != tt.ctx || v.TotalBytes != tt.mem.TotalBytes || v.AvailableBytes != tt.mem.AvailableBytes || v.BudgetBytes != tt.mem.Budget() {
				t.Errorf("verdict %+v does not carry the inputs", v)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		mem  fit.Memory
		want int64
	}{
		{fit.Memory{TotalBytes: 16 * gib}, 14 * gib},
		{fit.Memory{TotalBytes: 4 * gib}, 3 * gib},
		{fit.Memory{TotalBytes: 64 * gib, WorkingSetBytes: 48 * gib}, 48 * gib},
		{fit.Memory{TotalBytes: gib / 2}, 0},
	}
	for _, tt := range tests {
		if got := tt.mem.Budget(); got != tt.want {
			t.Errorf("%+v.Budget() = %d, want %d", tt.mem, got, tt.want)
		}
	}
}

func TestMaxContext(t *testing.T) {
	for _, limit := range []int64{6e9, 8e9, 12e9, 20e9} {
		got := fit.MaxContext(qwen3_8B, fit.Options{}, limit)
		step := 256
		if got >= 4096 {
			step = 1024
		}
		if got%step != 0 || got > qwen3_8B.MaxContextTokens {
			t.Errorf("MaxContext(%d) = %d: want a multiple of %d up to the model's context", limit, got, step)
		}
		need := func(ctx int) int64 { return fit.Estimate(qwen3_8B, fit.Options{ContextTokens: ctx}).Total() }
		if got > 0 && need(got) > limit {
			t.Errorf("MaxContext(%d) = %d needs %d", limit, got, need(got))
		}
		if got < qwen3_8B.MaxContextTokens && need(got+step) <= limit {
			t.Errorf("MaxContext(%d) = %d, but %d also fits", limit, got, got+step)
		}
	}
	if got := fit.MaxContext(qwen3_8B, fit.Options{}, 4e9); got != 0 {
		t.Errorf("MaxContext below the weights = %d, want 0", got)
	}
	if got := fit.MaxContext(qwen3_8B, fit.Options{}, 1e12); got != qwen3_8B.MaxContextTokens {
		t.Errorf("MaxContext with room to spare = %d, want %d", got, qwen3_8B.MaxContextTokens)
	}
}

func TestAdmit(t *testing.T) {
	mem := fit.Memory{TotalBytes: 16e9, AvailableBytes: 10e9}
	if _, err := fit.Admit("Qwen3-8B-4bit", qwen3_8B, fit.Options{ContextTokens: 4096}, mem); err != nil {
		t.Errorf("Admit at 4096 tokens: %v", err)
	}
	v, err := fit.Admit("Qwen3-8B-4bit", qwen3_8B, fit.Options{ContextTokens: 32768}, mem)
	var fe *fit.Error
	if !errors.As(err, &fe) || v.Status != fit.WontFit {
		t.Fatalf("Admit at 32768 tokens = %+v, %v; want a *fit.Error", v, err)
	}
	if fe.MaxContextTokens == 0 || fe.MaxContextTokens != v.MaxContextTokens || fe.MaxContextTokens >= 32768 {
		t.Errorf("error suggests %d tokens, verdict %d", fe.MaxContextTokens, v.MaxContextTokens)
	}
	want := "Qwen3-8B-4bit needs " + fit.FormatBytes(v.NeedBytes) + " at 32768 tokens of context; " + fit.FormatBytes(v.BudgetBytes) + " is available; it fits at "
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), " tokens") {
		t.Errorf("message %q, want it to start %q", err, want)
	}
	_, err = fit.Admit("Qwen3-8B-4bit", qwen3_8B, fit.Options{ContextTokens: 4096}, fit.Memory{TotalBytes: 4e9, AvailableBytes: 3e9})
	if err == nil || !strings.Contains(err.Error(), "its weights alone are 4.6 GB, so it does not fit at any context length") {
		t.Errorf("Admit on a 4 GB machine = %v", err)
	}
}

func TestErrorMessage(t *testing.T) {
	e := &fit.Error{Model: "Qwen3-8B-4bit", ContextTokens: 32768, NeedBytes: 6_100_000_000, BudgetBytes: 5_200_000_000, MaxContextTokens: 8192}
	if got, want := e.Error(), "Qwen3-8B-4bit needs 6.1 GB at 32768 tokens of context; 5.2 GB is available; it fits at 8192 tokens"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{6_100_000_000: "6.1 GB", 512_000_000: "512.0 MB", 93_100: "93.1 kB", 12: "12 B"} {
		if got := fit.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestSystem(t *testing.T) {
	m, err := fit.System()
	if err != nil {
		t.Fatal(err)
	}
	if m.TotalBytes < 256<<20 || m.AvailableBytes <= 0 || m.AvailableBytes > m.TotalBytes || m.WorkingSetBytes < 0 {
		t.Errorf("System() = %+v: want physical memory of at least 256 MiB and 0 < available ≤ total", m)
	}
}

// TestSequences: a runner that holds several sequences at once (batched
// requests) needs the KV cache of each; the rest of the estimate is one.
func TestSequences(t *testing.T) {
	s := fit.Shape{WeightBytes: 1 << 30, Hidden: 64, QDim: 64, Intermediate: 128, Layers: layers(fit.Layer{Kind: fit.Full, KVHeads: 2, HeadDim: 32}, 4)}
	one := fit.Estimate(s, fit.Options{ContextTokens: 1024})
	four := fit.Estimate(s, fit.Options{ContextTokens: 1024, Sequences: 4})
	if four.KVBytes != 4*one.KVBytes || four.WeightBytes != one.WeightBytes || four.WorkBytes != one.WorkBytes {
		t.Errorf("4 sequences: %+v; 1: %+v", four, one)
	}
}
