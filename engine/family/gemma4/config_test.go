package gemma4

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth/engine/config"
	"hearth/engine/fit"
	"hearth/internal/testmodels"
)

// parse reads the tiny gemma4-f32 config with edit applied.
func parse(t *testing.T, edit func(map[string]any)) *config.Config {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testmodels.Root(), "gemma4-f32", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	raw, _ = json.Marshal(m)
	c, err := config.Parse(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSettings: the per-layer head sizes and KV sources come out of both
// config spellings, and a switch this port does not implement is refused
// by name.
func TestSettings(t *testing.T) {
	s, err := readSettings(parse(t, func(map[string]any) {}))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.headDim; got[0] != 16 || got[1] != 32 || got[2] != 16 || got[3] != 32 {
		t.Errorf("head dims %v, want [16 32 16 32] from per_layer_config", got)
	}
	// A hub config written before per_layer_config: global_head_dim, and
	// the global KV heads only where attention_k_eq_v gates them.
	hub := parse(t, func(m map[string]any) {
		delete(m, "per_layer_config")
		m["global_head_dim"], m["num_global_key_value_heads"], m["attention_k_eq_v"] = 32, 1, true
	})
	if s, err = readSettings(hub); err != nil {
		t.Fatal(err)
	}
	if s.headDim[1] != 32 || s.kvHeads[1] != 1 || s.kvHeads[0] != 2 {
		t.Errorf("head dims %v, KV heads %v", s.headDim, s.kvHeads)
	}
	c := parse(t, func(map[string]any) {})
	s, _ = readSettings(c)
	for i, want := range []int{0, 1, 0, 1} { // the last two share the first two's caches
		if got, err := s.source(c, i); err != nil || got != want {
			t.Errorf("layer %d reads layer %d's cache (%v), want %d", i, got, err, want)
		}
	}
	for _, tc := range []struct {
		edit func(map[string]any)
		want string
	}{
		{func(m map[string]any) { m["use_bidirectional_attention"] = "all" }, "use_bidirectional_attention"},
		{func(m map[string]any) { m["num_kv_shared_layers"] = 4 }, "num_kv_shared_layers"},
		{func(m map[string]any) { m["enable_moe_block"] = true }, "num_experts"},
		{func(m map[string]any) {
			m["per_layer_config"] = map[string]any{"1": map[string]any{"num_key_value_heads": 3}}
		}, "KV heads"},
	} {
		if _, err := readSettings(parse(t, tc.edit)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one naming %q", err, tc.want)
		}
	}
}

// TestCacheLayers: shared layers keep no cache, full layers theirs at the
// global head size, so the fit estimate counts what NewCaches allocates.
func TestCacheLayers(t *testing.T) {
	layers, err := cacheLayers(parse(t, func(map[string]any) {}))
	if err != nil {
		t.Fatal(err)
	}
	want := []fit.Layer{{Kind: fit.Sliding, Window: 6, KVHeads: 2, HeadDim: 16}, {Kind: fit.Full, KVHeads: 2, HeadDim: 32}}
	if !slices.Equal(layers, want) {
		t.Errorf("cache layers %+v, want %+v", layers, want)
	}
}

// TestPLENull: an explicit null turns the per-layer inputs off (as
// transformers' None does); a config without the key gets the default.
func TestPLENull(t *testing.T) {
	for raw, want := range map[string]int{
		`{"hidden_size_per_layer_input":null}`: 0,
		`{}`:                                   256,
		`{"hidden_size_per_layer_input":128}`:  128,
	} {
		var text map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &text); err != nil {
			t.Fatal(err)
		}
		if got := config.NewFields(text).Int("hidden_size_per_layer_input", pleDefault(text)); got != want {
			t.Errorf("%s: %d, want %d", raw, got, want)
		}
	}
}
