package web

import (
	"encoding/json"
	"net/http"
	"testing"

	"hearth/engine/checkpoint"
	"hearth/engine/families"
	"hearth/engine/fit"
	"hearth/engine/tensor"
)

// TestKVQuantServe: a server whose runner keeps q8 KV caches answers, and
// /api/ps reports the cache type and a size smaller than an f32 server's
// by exactly what fit counts for the cache (docs/design/kv-quant.md).
func TestKVQuantServe(t *testing.T) {
	ck, err := checkpoint.Read(chatTiny().Dir)
	if err != nil {
		t.Fatal(err)
	}
	shape := families.Shape(ck.Config, ck.Weights.Bytes)
	model := chatTiny()
	model.Shape = shape
	ps := func(kv tensor.KVType) psModel {
		ts := startServer(t, func(c *serverConfig) { c.runner.KV, c.model = kv, model })
		var out chatOut
		ts.postOK(t, "/v1/chat/completions", chatBody("hello there", 6, ""), &out)
		if out.text() == "" || out.Usage.CompletionTokens == 0 {
			t.Errorf("kv %v: no answer: %+v", kv, out)
		}
		var p psResponse
		if r := ts.do(t, http.MethodGet, "/api/ps", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &p) != nil || len(p.Models) != 1 {
			t.Fatalf("kv %v: /api/ps = %d %s", kv, r.Status, r.Body)
		}
		return p.Models[0]
	}
	f32, q8 := ps(tensor.KVF32), ps(tensor.KVQ8)
	if f32.KVCache != "f32" || q8.KVCache != "q8" {
		t.Errorf("kv_cache = %q and %q, want f32 and q8", f32.KVCache, q8.KVCache)
	}
	ctx := f32.ContextLength
	want := fit.Estimate(shape, fit.Options{ContextTokens: ctx}).Total() - fit.Estimate(shape, fit.Options{ContextTokens: ctx, KV: tensor.KVQ8}).Total()
	if want <= 0 || f32.Size-q8.Size != want {
		t.Errorf("/api/ps size: f32 %d, q8 %d (Δ %d), want Δ %d", f32.Size, q8.Size, f32.Size-q8.Size, want)
	}
}
