package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunShowsThinking runs chat-tiny with a chat template that opens a
// <think> block, so its whole reply is thinking: hearth run shows it
// between ollama run's markers instead of dropping it.
func TestRunShowsThinking(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join(chatTinyDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const tmpl = "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
		"{%- if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
	cfg, _ := json.Marshal(map[string]any{"eos_token": "<|im_end|>", "chat_template": tmpl, "model_max_length": 256})
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	c, out, _ := newCLI(t, "", nil)
	if err := c.run([]string{"run", "--temperature", "0", "--max-tokens", "8", dir, "hello"}); err != nil {
		t.Fatal(err)
	}
	o := out.String()
	thought, ok := strings.CutPrefix(o, "Thinking...\n")
	thought, ok2 := strings.CutSuffix(thought, "\n...done thinking.\n")
	if !ok || !ok2 || strings.TrimSpace(thought) == "" {
		t.Errorf("stdout %q, want the thinking between Thinking... and ...done thinking.", o)
	}
}

// TestRunWithDraftModel: hearth run --draft DIR drafts with that model
// (here the target itself, whose every guess stands) and prints what plain
// decoding prints; a draft that is not a model is refused by name.
func TestRunWithDraftModel(t *testing.T) {
	args := []string{"run", "--temperature", "0", "--max-tokens", "12", chatTinyDir, "hello"}
	c, plain, _ := newCLI(t, "", nil)
	if err := c.run(args); err != nil {
		t.Fatal(err)
	}
	c, drafted, _ := newCLI(t, "", nil)
	if err := c.run(append([]string{"run", "--draft", chatTinyDir}, args[1:]...)); err != nil {
		t.Fatal(err)
	}
	if drafted.String() != plain.String() || plain.String() == "" {
		t.Errorf("with --draft: %q; plain: %q", drafted.String(), plain.String())
	}
	c, _, _ = newCLI(t, "", nil)
	err := c.run(append([]string{"run", "--draft", filepath.Join(t.TempDir(), "nothing")}, args[1:]...))
	if err == nil || !strings.Contains(err.Error(), "--draft") {
		t.Errorf("a draft that is not a model: %v", err)
	}
}
