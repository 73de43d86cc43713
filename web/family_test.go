package web

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/pool"
	"hearth/internal/testmodels"
)

// familyModel assembles a chat model for one oracle-checked architecture:
// its f32 weights and config (vocab 512, like every testdata model) with
// chat-tiny's 512-token tokenizer and ChatML template.
func familyModel(t *testing.T, e testmodels.Entry) pool.Model {
	t.Helper()
	dir := t.TempDir()
	copyFile := func(from, name string) {
		raw, err := os.ReadFile(filepath.Join(from, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(e.Path(), "config.json")
	copyFile(e.Path(), "model.safetensors")
	tiny := filepath.Join(testmodels.Root(), "chat-tiny")
	copyFile(tiny, "tokenizer.json")
	copyFile(tiny, "tokenizer_config.json")
	return pool.Model{ID: "chat-tiny", Dir: dir}
}

// TestChatEveryFamily serves one model of every supported model_type and
// runs a chat through it, whole and streamed: the streamed text must equal
// the whole answer, and usage must count the same tokens.
func TestChatEveryFamily(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries {
		if e.Variant != "f32" {
			continue
		}
		t.Run(e.ModelType, func(t *testing.T) {
			model := familyModel(t, e)
			ts := startServer(t, func(c *serverConfig) { c.model = model })
			var whole chatOut
			ts.postOK(t, "/v1/chat/completions", chatBody("hello there", 12, ""), &whole)
			fs := ts.stream(t, "/v1/chat/completions", chatBody("hello there", 12, `,"stream":true,"stream_options":{"include_usage":true}`))
			var sb strings.Builder
			var usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
			for _, f := range fs {
				if f.Data == "[DONE]" {
					continue
				}
				var chunk struct {
					Choices []struct {
						Delta struct {
							Content string `json:"content"`
						} `json:"delta"`
					} `json:"choices"`
					Usage *struct {
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				if err := json.Unmarshal([]byte(f.Data), &chunk); err != nil {
					t.Fatalf("frame %q: %v", f.Data, err)
				}
				for _, c := range chunk.Choices {
					sb.WriteString(c.Delta.Content)
				}
				if chunk.Usage != nil {
					usage.CompletionTokens = chunk.Usage.CompletionTokens
				}
			}
			if sb.String() != whole.text() || usage.CompletionTokens != whole.Usage.CompletionTokens || usage.CompletionTokens == 0 {
				t.Errorf("%s: streamed %q (%d tokens), whole %q (%d tokens)", e.Name, sb.String(), usage.CompletionTokens, whole.text(), whole.Usage.CompletionTokens)
			}
		})
	}
}

// TestModelSamplingDefaults serves a model whose generation_config.json
// asks for greedy decoding: a request that sets no temperature follows it
// (the same answer whatever the seed), one that sets a temperature does not.
func TestModelSamplingDefaults(t *testing.T) {
	dir := t.TempDir()
	tiny := filepath.Join(testmodels.Root(), "chat-tiny")
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		raw, err := os.ReadFile(filepath.Join(tiny, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), raw, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"do_sample": false, "temperature": 0.9, "eos_token_id": 511}`), 0o644)
	ts := startServer(t, func(c *serverConfig) { c.model = pool.Model{ID: "chat-tiny", Dir: dir} })
	answer := func(extra string) string {
		var out chatOut
		ts.postOK(t, "/v1/chat/completions", `{"model":"chat-tiny","messages":[{"role":"user","content":"hello"}],"max_tokens":24`+extra+`}`, &out)
		return out.text()
	}
	if a, b := answer(`,"seed":1`), answer(`,"seed":2`); a != b {
		t.Errorf("with the model's greedy default, seeds 1 and 2 gave %q and %q", a, b)
	}
	differ := false
	for seed := 1; seed <= 4 && !differ; seed++ {
		differ = answer(`,"temperature":1.5,"seed":1`) != answer(fmt.Sprintf(`,"temperature":1.5,"seed":%d`, seed+10))
	}
	if !differ {
		t.Error("an explicit temperature 1.5 gave the same answer for every seed: the request did not override the model's default")
	}
}
