package parity

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/tensor"
	"hearth/internal/testmodels"
)

// TestQwen35Layouts holds the Qwen 3.5 entries to their goldens in the
// layouts real checkpoints ship, which the oracle's text-only saves do not
// cover: transformers' Qwen3_5ForConditionalGeneration (config under
// text_config, the decoder under model.language_model. and the
// multi-token-prediction head under mtp.), and mlx-lm's conversion of it
// (the decoder under language_model.model., the head at
// language_model.lm_head, conv1d weights as [C, K, 1] and the (1 + w)
// norms stored with the 1 added).
func TestQwen35Layouts(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		entry, top, prefix, head string
		extra                    []string // tensors the port must leave alone
		mlx                      bool     // mlx-lm's sanitized weights
	}{
		// a qwen3_5 (qwen3_5_moe) checkpoint's tower is read by
		// engine/tower/qwenvl (TestQwen35Vision*, TestQwen35MoeVision*), so
		// these carry none: a partial one fails the load
		{"qwen3_5-f32", "qwen3_5", "model.language_model.", "lm_head", []string{"mtp.fc.weight"}, false},
		{"qwen3_5-bf16", "qwen3_5", "language_model.model.", "language_model.lm_head", nil, true},
		{"qwen3_5_moe-f32", "qwen3_5_moe", "model.language_model.", "lm_head", []string{"mtp.layers.0.mlp.gate.weight"}, false},
		{"qwen3_5_moe-q4g64", "qwen3_5_moe", "language_model.model.", "language_model.lm_head", nil, true},
	} {
		e, ok := m.Find(tc.entry)
		if !ok {
			t.Fatalf("no manifest entry %s", tc.entry)
		}
		t.Run(tc.entry+"/"+strings.TrimSuffix(tc.prefix, "."), func(t *testing.T) {
			l := layout{top: tc.top, arch: "Qwen3_5ForConditionalGeneration", vision: map[string]any{"depth": 1, "hidden_size": 8},
				prefix: tc.prefix, head: tc.head, extra: tc.extra, topQuant: true}
			if tc.mlx {
				l.edit = sanitize
			}
			dir := l.copyAs(t, e.Dir)
			checkDir(t, e, dir, engine.Options{Backend: "cpu"})
		})
	}
}

// sanitize does to w what mlx-lm's qwen3_5 sanitize does to a
// transformers checkpoint: conv1d weights [C, 1, K] become [C, K, 1], and
// the (1 + w) norms' weights get the 1 added. mlx-lm rounds the sum to the
// weight's dtype; here it stays float32, so the goldens still hold exactly.
func sanitize(t *testing.T, w *tensor.Weight) {
	if strings.HasSuffix(w.Name, "conv1d.weight") {
		w.Shape = []int{w.Shape[0], w.Shape[2], w.Shape[1]}
		return
	}
	shifted := false
	for _, suffix := range []string{".input_layernorm.weight", ".post_attention_layernorm.weight", "model.norm.weight", ".q_norm.weight", ".k_norm.weight"} {
		shifted = shifted || strings.HasSuffix(w.Name, suffix)
	}
	if !shifted {
		return
	}
	if w.Quantized() || len(w.Shape) != 1 {
		t.Fatalf("%s: not a dense norm weight", w.Name)
	}
	vals := make([]float32, w.Shape[0])
	tensor.Float32(w.DType, w.Data, 0, vals)
	data := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v+1))
	}
	w.DType, w.Data = tensor.F32, data
}

// TestQwen35PartialTower: a qwen3_5 (and qwen3_5_moe) checkpoint's vision
// tower is read, not skipped, so one that lacks tensors fails the load,
// naming a tower tensor.
func TestQwen35PartialTower(t *testing.T) {
	for _, entry := range []string{"qwen3_5-f32", "qwen3_5_moe-f32"} {
		t.Run(entry, func(t *testing.T) { partialTower(t, entry) })
	}
}

func partialTower(t *testing.T, entry string) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m.Find(entry)
	if !ok {
		t.Fatalf("no manifest entry %s", entry)
	}
	top := strings.TrimSuffix(entry, "-f32")
	l := layout{top: top, arch: "Qwen3_5ForConditionalGeneration",
		vision: map[string]any{"depth": 1, "hidden_size": 8, "num_heads": 2, "out_hidden_size": 64, "num_position_embeddings": 4},
		prefix: "model.language_model.", head: "lm_head", extra: []string{"model.visual.blocks.0.attn.qkv.weight"}}
	dir := l.copyAs(t, e.Dir)
	path := filepath.Join(dir, "config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["image_token_id"], cfg["vision_start_token_id"], cfg["vision_end_token_id"], cfg["video_token_id"] = 509, 507, 508, 510
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	model, err := engine.Load(dir, engine.Options{Backend: "cpu"})
	if err == nil {
		model.Close()
		t.Fatalf("a %s checkpoint with a partial vision tower loaded", top)
	}
	if !strings.Contains(err.Error(), "model.visual.") {
		t.Fatalf("load error %q names no tower tensor", err)
	}
	t.Log(err)
}
