package template

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// tokenizerConfig is the part of tokenizer_config.json a chat template
// needs. Token fields are a string, an AddedToken object ({"content": ...})
// or null.
type tokenizerConfig struct {
	ChatTemplate json.RawMessage   `json:"chat_template"`
	BOS          json.RawMessage   `json:"bos_token"`
	EOS          json.RawMessage   `json:"eos_token"`
	UNK          json.RawMessage   `json:"unk_token"`
	PAD          json.RawMessage   `json:"pad_token"`
	SEP          json.RawMessage   `json:"sep_token"`
	CLS          json.RawMessage   `json:"cls_token"`
	Mask         json.RawMessage   `json:"mask_token"`
	Additional   []json.RawMessage `json:"additional_special_tokens"`
}

// special reads the special tokens map.
func (c *tokenizerConfig) special() (Special, error) {
	var s Special
	fields := []struct {
		key string
		raw json.RawMessage
		dst *string
	}{
		{"bos_token", c.BOS, &s.BOS}, {"eos_token", c.EOS, &s.EOS}, {"unk_token", c.UNK, &s.UNK},
		{"pad_token", c.PAD, &s.PAD}, {"sep_token", c.SEP, &s.SEP}, {"cls_token", c.CLS, &s.CLS},
		{"mask_token", c.Mask, &s.Mask},
	}
	for _, f := range fields {
		text, err := tokenText(f.raw)
		if err != nil {
			return Special{}, fmt.Errorf("%q: %w", f.key, err)
		}
		*f.dst = text
	}
	for i, raw := range c.Additional {
		text, err := tokenText(raw)
		if err != nil {
			return Special{}, fmt.Errorf("\"additional_special_tokens\"[%d]: %w", i, err)
		}
		s.Additional = append(s.Additional, text)
	}
	return s, nil
}

// tokenText reads a token given as a string, an AddedToken object or null.
func tokenText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var tok struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &tok); err != nil || tok.Content == nil {
		return "", fmt.Errorf("want a string or an object with \"content\", got %s", raw)
	}
	return *tok.Content, nil
}

// templates returns the default template and the "tool_use" one, if any.
func (c *tokenizerConfig) templates() (def, toolUse string, err error) {
	raw := c.ChatTemplate
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	if err := json.Unmarshal(raw, &def); err == nil {
		return def, "", nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", "", fmt.Errorf("\"chat_template\": want a string or a list of {name, template}")
	}
	byName := map[string]string{}
	for _, n := range named {
		byName[n.Name] = n.Template
	}
	if byName["default"] == "" {
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", "", fmt.Errorf("\"chat_template\" has no \"default\" template (has: %s)", strings.Join(names, ", "))
	}
	return byName["default"], byName["tool_use"], nil
}
