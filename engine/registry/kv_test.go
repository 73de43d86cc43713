package registry

import (
	"bytes"
	"strings"
	"testing"

	"hearth/engine/fit"
	"hearth/engine/tensor"
)

// TestTableKV: `hearth ls --kv q8` judges fit with the q8 cache, so a model
// that holds only part of its context with f32 caches reports a longer
// one that fits.
func TestTableKV(t *testing.T) {
	rec := tableRecords()[0] // Qwen3-8B 4-bit, 40K context
	mem := fit.Memory{TotalBytes: 10e9, AvailableBytes: 8e9}
	f32, q8 := FitAtKV(mem, 40960, tensor.KVF32)(rec), FitAtKV(mem, 40960, tensor.KVQ8)(rec)
	if f32 != FitAt(mem, 40960)(rec) {
		t.Errorf("FitAtKV(f32) = %+v, FitAt %+v", f32, FitAt(mem, 40960)(rec))
	}
	if f32.MaxContextTokens >= 40960 || f32.MaxContextTokens <= 0 {
		t.Fatalf("f32 longest context %d: the case wants a partial fit", f32.MaxContextTokens)
	}
	want := fit.MaxContext(rec.Shape, fit.Options{ContextTokens: 40960, KV: tensor.KVQ8}, mem.Budget())
	if q8.MaxContextTokens != want || q8.MaxContextTokens < 2*f32.MaxContextTokens {
		t.Errorf("q8 longest context %d, want %d (f32: %d)", q8.MaxContextTokens, want, f32.MaxContextTokens)
	}
	t.Logf("longest context that fits: f32 %d, q8 %d", f32.MaxContextTokens, q8.MaxContextTokens)
	var buf bytes.Buffer
	if err := Table(&buf, []Record{rec}, FitAtKV(mem, 40960, tensor.KVQ8)); err != nil {
		t.Fatal(err)
	}
	if cell := ctxLabel(q8.MaxContextTokens) + " fits"; q8.MaxContextTokens < 40960 && !strings.Contains(buf.String(), cell) {
		t.Errorf("table does not show %q:\n%s", cell, buf.String())
	}
}
