package family

import (
	"errors"
	"strings"
	"testing"

	"hearth/engine/config"
)

func TestNearest(t *testing.T) {
	types := []string{"gemma", "gemma2", "gemma3_text", "llama", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}
	for _, tc := range []struct{ in, want string }{
		{"qwen3_next", "qwen3"},
		{"qwen2_vl", "qwen2"},
		{"qwen3_moe_v2", "qwen3_moe"},
		{"gemma3n", "gemma3_text"},
		{"llama4", "llama"},
		{"rwkv7", ""},
		{"gpt2", ""},
		{"gem", ""},
	} {
		if got := Nearest(tc.in, types); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestResolveNamesNearestType(t *testing.T) {
	fam := &Family{Name: "g", Accepts: func(c *config.Config) bool { return c.ModelType == "qwen3" },
		Types: func() []string { return []string{"qwen3", "llama"} }}
	_, err := Resolve([]*Family{fam}, &config.Config{ModelType: "qwen3_next"})
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
	for _, want := range []string{`unsupported model_type "qwen3_next"`, `nearest supported type is "qwen3"`, "supported: llama, qwen3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
