package testmodels

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/tensor"
)

// EmbedGolden is testdata/models/qwen3_embed-f32/golden.json, written by
// tools/oracle/make_embedding_goldens.py.
type EmbedGolden struct {
	Transformers string      `json:"transformers"`
	HiddenSize   int         `json:"hidden_size"`
	Cases        []EmbedCase `json:"cases"`
}

// EmbedCase is one input's reference vectors.
type EmbedCase struct {
	InputIDs  []int32   `json:"input_ids"`
	Hidden    []float32 `json:"last_hidden_state"` // [n, hidden]
	LastToken []float32 `json:"lasttoken"`         // last-token pooled, normalized
	Mean      []float32 `json:"mean"`              // mean pooled, normalized
	Dims      int       `json:"lasttoken_dims"`
	Cut       []float32 `json:"lasttoken_cut"` // LastToken's first Dims, normalized again
}

// LoadEmbedGolden reads the embedding golden.
func LoadEmbedGolden(t testing.TB) *EmbedGolden {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(Root(), "qwen3_embed-f32", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g EmbedGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

// EmbedDir builds a Qwen3-Embedding-shaped checkpoint in a temporary
// folder of t: qwen3-f32's config and weights, saved bare (no "model."
// prefix, as AutoModel saves Qwen3-Embedding), chat-tiny's tokenizer with a
// post-processor that appends <|endoftext|> (as Qwen3-Embedding's does)
// and qwen3_embed-f32's sentence-transformers files, its Pooling module set
// to pooling ("lasttoken" or "mean_tokens"). The weights are not committed
// twice.
func EmbedDir(t testing.TB, pooling string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "qwen3_embed-f32")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(Root(), "qwen3_embed-f32"))); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "golden.json"))
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors"} {
		copyFile(t, filepath.Join(Root(), "qwen3-f32", f), filepath.Join(dir, f))
	}
	Rewrite(t, dir, func(ws []tensor.Weight) []tensor.Weight {
		for i := range ws {
			ws[i].Name = strings.TrimPrefix(ws[i].Name, "model.")
		}
		return ws
	})
	copyFile(t, filepath.Join(Root(), "chat-tiny", "tokenizer_config.json"), filepath.Join(dir, "tokenizer_config.json"))
	raw, err := os.ReadFile(filepath.Join(Root(), "chat-tiny", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tj map[string]any
	if err := json.Unmarshal(raw, &tj); err != nil {
		t.Fatal(err)
	}
	eos := map[string]any{"id": "<|endoftext|>", "ids": []int{509}, "tokens": []string{"<|endoftext|>"}}
	tj["post_processor"] = map[string]any{"type": "Sequence", "processors": []any{
		tj["post_processor"],
		map[string]any{
			"type":           "TemplateProcessing",
			"single":         []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"SpecialToken": map[string]any{"id": "<|endoftext|>", "type_id": 0}}},
			"pair":           []any{map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}, map[string]any{"SpecialToken": map[string]any{"id": "<|endoftext|>", "type_id": 1}}},
			"special_tokens": map[string]any{"<|endoftext|>": eos},
		},
	}}
	writeJSON(t, filepath.Join(dir, "tokenizer.json"), tj)
	if pooling != "lasttoken" {
		writeJSON(t, filepath.Join(dir, "1_Pooling", "config.json"), map[string]any{
			"word_embedding_dimension": 64, "pooling_mode_lasttoken": false, "pooling_mode_mean_tokens": false,
			"pooling_mode_" + pooling: true, "include_prompt": true,
		})
	}
	return dir
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, raw, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err == nil {
		err = os.WriteFile(path, raw, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}
