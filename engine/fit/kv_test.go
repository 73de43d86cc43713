package fit_test

import (
	"testing"

	"hearth/engine/fit"
	"hearth/engine/tensor"
)

// TestKVQuantBytes: a q8 cache holds one byte per element (q4 half a
// byte) plus a float32 scale per 32 of a head row, and the longest context that fits a budget
// grows by as much as the cache shrinks.
func TestKVQuantBytes(t *testing.T) {
	full := fit.Layer{Kind: fit.Full, KVHeads: 8, HeadDim: 128}
	sliding := fit.Layer{Kind: fit.Sliding, KVHeads: 8, HeadDim: 80, Window: 1024}
	s := fit.Shape{Layers: []fit.Layer{full, sliding}, Hidden: 1024, QDim: 1024, Intermediate: 4096, Vocab: 1000}
	const ctx = 8192
	got := fit.Estimate(s, fit.Options{ContextTokens: ctx, KV: tensor.KVQ8}).KVBytes
	// 128 = 4 groups of 32; 80 = 3 groups (32, 32, 16)
	want := int64(2*8*(128+4*4))*ctx + int64(2*8*(80+3*4))*(1024+512)
	if got != want {
		t.Errorf("q8 KVBytes = %d, want %d", got, want)
	}
	q4 := fit.Estimate(s, fit.Options{ContextTokens: ctx, KV: tensor.KVQ4}).KVBytes
	if want := int64(2*8*(64+4*4))*ctx + int64(2*8*(40+3*4))*(1024+512); q4 != want {
		t.Errorf("q4 KVBytes = %d, want %d", q4, want)
	}
	f32 := fit.Estimate(s, fit.Options{ContextTokens: ctx}).KVBytes
	if f32 != int64(2*8*128*4)*ctx+int64(2*8*80*4)*(1024+512) {
		t.Errorf("f32 KVBytes = %d", f32)
	}
	// a budget where the f32 cache stops at 32K of a 128K model
	s.MaxContextTokens = 131072
	s.Layers = []fit.Layer{full}
	limit := fit.Estimate(s, fit.Options{ContextTokens: 32768}).Total()
	at32, q8 := fit.MaxContext(s, fit.Options{}, limit), fit.MaxContext(s, fit.Options{KV: tensor.KVQ8}, limit)
	if at32 != 32768 {
		t.Errorf("f32 MaxContext = %d, want 32768", at32)
	}
	if q8 < 3*at32 {
		t.Errorf("q8 MaxContext = %d, want over 3 × %d (the cache is 0.28 of f32's)", q8, at32)
	}
	if fit.Estimate(s, fit.Options{ContextTokens: q8, KV: tensor.KVQ8}).Total() > limit {
		t.Errorf("q8 MaxContext %d does not fit", q8)
	}
}
