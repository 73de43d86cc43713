package main

import (
	"strings"
	"testing"
)

func TestBenchFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "exactly one of --model and --synthetic"},
		{[]string{"bench", "--model", "x", "--synthetic", "qwen3-1.7b"}, "exactly one of --model and --synthetic"},
		{[]string{"bench", "--synthetic", "qwen3-1.7b", "--prompts", "12,abc"}, `"abc" is not a token count`},
		{[]string{"bench", "--synthetic", "gpt-9"}, `unknown synthetic shape "gpt-9"`},
	}
	for _, tt := range tests {
		c, _, _ := newCLI(t, "", nil)
		err := c.run(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("hearth %v: error = %v, want %q", tt.args, err, tt.want)
		}
	}
}
