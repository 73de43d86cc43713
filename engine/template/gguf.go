package template

import (
	"fmt"

	"hearth/engine/gguf"
)

// FromGGUF compiles the chat template a GGUF file carries, as llama.cpp's
// converter (gguf-py's SpecialVocab) writes it: tokenizer.chat_template
// (a named list's "default" template; "tool_use" goes to
// tokenizer.chat_template.tool_use, used when tools are given), rendered
// with the special tokens that the tokenizer.ggml.*_token_id keys name in
// tokenizer.ggml.tokens. A file without a template is ErrNoTemplate.
func FromGGUF(f *gguf.File) (*Template, error) {
	def, err := ggufString(f, "tokenizer.chat_template")
	if err != nil {
		return nil, err
	}
	if def == "" {
		return nil, fmt.Errorf("load chat template: %w (the GGUF file has no tokenizer.chat_template)", ErrNoTemplate)
	}
	toolUse, err := ggufString(f, "tokenizer.chat_template.tool_use")
	if err != nil {
		return nil, err
	}
	return newTemplate("tokenizer.chat_template", def, toolUse, ggufSpecial(f))
}

// ggufString reads an optional string key.
func ggufString(f *gguf.File, key string) (string, error) {
	v, ok := f.Get(key)
	if !ok {
		return "", nil
	}
	s, ok := v.V.(string)
	if !ok {
		return "", fmt.Errorf("load chat template: %s: %s, want a string", key, v.Type)
	}
	return s, nil
}

// ggufSpecial reads the texts of the special tokens the file names.
func ggufSpecial(f *gguf.File) Special {
	var s Special
	var tokens []string
	if v, ok := f.Get("tokenizer.ggml.tokens"); ok {
		tokens, _ = v.V.([]string)
	}
	for _, x := range []struct {
		key string
		dst *string
	}{
		{"tokenizer.ggml.bos_token_id", &s.BOS}, {"tokenizer.ggml.eos_token_id", &s.EOS},
		{"tokenizer.ggml.unknown_token_id", &s.UNK}, {"tokenizer.ggml.padding_token_id", &s.PAD},
		{"tokenizer.ggml.seperator_token_id", &s.SEP}, {"tokenizer.ggml.cls_token_id", &s.CLS},
		{"tokenizer.ggml.mask_token_id", &s.Mask},
	} {
		// An id that names no token leaves the name undefined, as
		// llama.cpp ignores it; the tokenizer refuses a bad BOS or EOS.
		if id, ok := f.Uint(x.key); ok && id < uint64(len(tokens)) {
			*x.dst = tokens[id]
		}
	}
	return s
}

// loadGGUF is Load for a GGUF checkpoint file.
func loadGGUF(path string) (*Template, error) {
	m, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load chat template: %w", err)
	}
	return FromGGUF(m.Meta())
}
