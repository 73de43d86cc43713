package gguf_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/gguf"
	"hearth/engine/registry"
	"hearth/engine/template"
	"hearth/engine/tokenizer"
	"hearth/internal/testmodels"
)

// tokenizerKV is what convert_hf_to_gguf.py's _set_vocab_gpt2 writes for
// chat-tiny's byte-level BPE tokenizer (512 pieces, the last three also
// special added tokens), with the chat template: tokens
// by id, their types (CONTROL for the special added ones), the merges,
// the pre-tokenizer name of a plain GPT-2 ByteLevel split, and the
// special ids of tokenizer_config.json.
func tokenizerKV(t *testing.T) []gguf.KV {
	t.Helper()
	dir := filepath.Join(testmodels.Root(), "chat-tiny")
	var tj struct {
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges []string       `json:"merges"`
		} `json:"model"`
		Added []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
	}
	var cfg struct {
		Template string `json:"chat_template"`
	}
	for file, v := range map[string]any{"tokenizer.json": &tj, "tokenizer_config.json": &cfg} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, id := range tj.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range tj.Added {
		n = max(n, a.ID+1)
	}
	tokens, types := make([]string, n), make([]int64, n)
	for piece, id := range tj.Model.Vocab {
		tokens[id], types[id] = piece, 1 // NORMAL
	}
	for _, a := range tj.Added {
		tokens[a.ID], types[a.ID] = a.Content, 4 // USER_DEFINED
		if a.Special {
			types[a.ID] = 3 // CONTROL
		}
	}
	return []gguf.KV{
		str("tokenizer.ggml.model", "gpt2"),
		str("tokenizer.ggml.pre", "gpt-2"),
		{Key: "tokenizer.ggml.tokens", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeString, V: tokens}},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeInt32, V: types}},
		{Key: "tokenizer.ggml.merges", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeString, V: tj.Model.Merges}},
		u32("tokenizer.ggml.eos_token_id", 511),
		u32("tokenizer.ggml.padding_token_id", 509),
		{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Value{Type: gguf.TypeBool, V: false}},
		str("tokenizer.chat_template", cfg.Template),
	}
}

// TestGGUFServe runs a chat through a runner opened on one .gguf file
// (weights, tokenizer and chat template all from it, as hearth serve
// --model file.gguf does) and through the same model as a safetensors
// folder with the tokenizer files the GGUF metadata was made from: the
// prompt ids, the rendered template and the greedy answer must agree.
func TestGGUFServe(t *testing.T) {
	c := convert(t, "qwen3-f32", gguf.F32)
	c.kv = slices.DeleteFunc(slices.Clone(c.kv), func(kv gguf.KV) bool { return strings.HasPrefix(kv.Key, "tokenizer.") })
	c.kv = append(c.kv, tokenizerKV(t)...)
	path := c.write(t, "tiny.gguf")

	dir := testmodels.Copy(t, "qwen3-f32")
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		raw, err := os.ReadFile(filepath.Join(testmodels.Root(), "chat-tiny", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	editConfig(t, dir, func(c map[string]any) { c["eos_token_id"] = []int{511}; c["pad_token_id"] = 509 })
	os.Remove(filepath.Join(dir, "generation_config.json")) // the GGUF file has none

	// hearth serve --model resolves the path through the registry.
	rec, err := registry.New(t.TempDir()).Resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Dir != path || rec.ModelType != "qwen3" || rec.Quantization != "f32" || rec.Tier == registry.TierUnsupported {
		t.Errorf("record %+v", rec)
	}

	gt, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Hello, what is Hearth?", "<|im_start|>user\n  tabs\tand ümlauts<|im_end|>\n"} {
		if a, b := gt.Encode(s, true), st.Encode(s, true); !slices.Equal(a, b) {
			t.Errorf("%q: GGUF tokenizer %v, tokenizer.json %v", s, a, b)
		}
	}
	msgs := json.RawMessage(`[{"role":"user","content":"Hello, what is Hearth?"}]`)
	var rendered [2]string
	for i, p := range []string{path, dir} {
		tmpl, err := template.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if rendered[i], err = tmpl.Render(context.Background(), msgs, template.Options{AddGenerationPrompt: true}); err != nil {
			t.Fatal(err)
		}
	}
	if rendered[0] != rendered[1] {
		t.Errorf("GGUF template renders %q, tokenizer_config.json's %q", rendered[0], rendered[1])
	}

	var answers [2]string
	var usage [2]engine.Usage
	for i, p := range []string{path, dir} {
		r, err := engine.Open(p, engine.RunnerOptions{Options: engine.Options{Backend: "cpu"}})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		usage[i], err = r.Generate(context.Background(), engine.Request{Messages: msgs, MaxTokens: 8}, func(d engine.Delta) error {
			sb.WriteString(d.Content)
			return nil
		})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		answers[i] = sb.String()
	}
	counts := func(u engine.Usage) [3]any { return [3]any{u.PromptTokens, u.CompletionTokens, u.FinishReason} }
	if answers[0] != answers[1] || counts(usage[0]) != counts(usage[1]) {
		t.Errorf("GGUF answer %q %v, safetensors %q %v", answers[0], counts(usage[0]), answers[1], counts(usage[1]))
	}
	if usage[0].CompletionTokens == 0 {
		t.Errorf("no tokens generated: %+v", usage[0])
	}
	t.Logf("answer %q, %v", answers[0], counts(usage[0]))
}
