package toolcall

import (
	"os"
	"testing"
)

// The templates are copies of the checkpoints' chat templates (see
// engine/template/testdata/templates for their provenance).
func TestDetect(t *testing.T) {
	tests := []struct {
		file string
		want Format
	}{
		{"qwen3.jinja", Hermes},
		{"llama3_1.jinja", Llama3},
		{"llama3_2.jinja", Llama3},
		{"ministral3.jinja", Mistral},
		{"gemma3.jinja", Gemma},
		{"deepseek_v3.jinja", DeepSeek},
	}
	for _, tt := range tests {
		src, err := os.ReadFile("testdata/templates/" + tt.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := Detect(string(src)); got != tt.want {
			t.Errorf("Detect(%s) = %q, want %q", tt.file, got, tt.want)
		}
	}
}
