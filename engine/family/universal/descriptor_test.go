package universal

import (
	"errors"
	"strings"
	"testing"

	"hearth/engine/config"
	"hearth/engine/family"
)

func TestResolve(t *testing.T) {
	fams := []*family.Family{&Family}
	tests := []struct {
		modelType string
		want      string // descriptor key, or "" for unsupported
	}{
		{"llama", "llama"}, {"mistral", "llama"}, {"qwen2", "qwen2"}, {"qwen3", "qwen3"}, {"gemma3_text", "gemma3_text"},
		{"phi3", "phi3"}, {"rwkv7", ""}, {"qwen3_moe", "qwen3_moe"}, {"mixtral", "mixtral"}, {"deepseek_v3", ""},
		{"granite", "granite"},
	}
	for _, tt := range tests {
		c := &config.Config{ModelType: tt.modelType, TextModelType: tt.modelType}
		f, err := family.Resolve(fams, c)
		if tt.want == "" {
			if !errors.Is(err, family.ErrUnsupported) || !strings.Contains(err.Error(), strings.Join(Types(), ", ")) {
				t.Errorf("Resolve(%q) = %v, %v; want ErrUnsupported listing the supported types", tt.modelType, f, err)
			}
			continue
		}
		if err != nil || f != &Family {
			t.Errorf("Resolve(%q) = %v, %v; want the universal family", tt.modelType, f, err)
		}
		if _, key, _ := Lookup(tt.modelType); key != tt.want {
			t.Errorf("Lookup(%q) = %q, want %q", tt.modelType, key, tt.want)
		}
	}
}

// TestAliasesPointAtDescriptors keeps the alias table from naming a
// descriptor that does not exist.
func TestAliasesPointAtDescriptors(t *testing.T) {
	for from, to := range aliases {
		if _, ok := descriptors[to]; !ok {
			t.Errorf("alias %q → %q: no such descriptor", from, to)
		}
		if _, ok := descriptors[from]; ok {
			t.Errorf("alias %q shadows a descriptor of the same name", from)
		}
	}
}
