package qwenvl

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name, in, err string
	}{
		{"defaults", `{}`, ""},
		{"tiny", `{"depth":2,"hidden_size":32,"num_heads":2,"patch_size":8,"num_position_embeddings":36,"out_hidden_size":64}`, ""},
		{"deepstack", `{"deepstack_visual_indexes":[8,16,24]}`, "deepstack_visual_indexes"},
		{"grid not square", `{"num_position_embeddings":40}`, "not a square"},
		{"head not a multiple of 4", `{"hidden_size":36,"num_heads":6}`, "multiple of 4"},
		{"zero depth", `{"depth":0}`, `"depth"`},
		{"axial rope", `{"rope_parameters":{"rope_type":"axial","rope_theta":10000}}`, ""},
		{"other rope", `{"rope_parameters":{"rope_type":"default","rope_theta":10000}}`, "rope_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig(json.RawMessage(tt.in))
			if tt.err == "" {
				if err != nil {
					t.Fatalf("ParseConfig(%s) = %v", tt.in, err)
				}
				if c.Rope.Theta != 10000 || c.Merge != 2 || c.Temporal != 2 {
					t.Errorf("defaults: theta %v, merge %d, temporal %d", c.Rope.Theta, c.Merge, c.Temporal)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ParseConfig(%s) = %v, want an error about %s", tt.in, err, tt.err)
			}
		})
	}
}

// TestLinspace: torch.linspace(0, end, steps) in float32 counts the
// second half down from end: at 47 over 6 steps the fourth value is
// 47 - 2·step = float32(28.2), where 3·step would be 28.199999. The values
// are torch 2.11's, printed by tools/oracle/make_qwen_vision_goldens.py.
func TestLinspace(t *testing.T) {
	tests := []struct {
		end   float32
		steps int
		want  []float32
	}{
		{5, 1, []float32{0}},
		{5, 2, []float32{0, 5}},
		{3, 4, []float32{0, 1, 2, 3}},
		{47, 6, []float32{0, 9.4, 18.8, 28.2, 37.6, 47}},
		{5, 4, []float32{0, 1.6666666, 3.3333335, 5}},
		{5, 16, []float32{0, 0.33333334, 0.6666667, 1, 1.3333334, 1.6666667, 2, 2.3333335, 2.6666665, 3, 3.3333333, 3.6666665, 4, 4.3333335, 4.6666665, 5}},
	}
	for _, tt := range tests {
		if got := linspace(tt.end, tt.steps); !slices.Equal(got, tt.want) {
			t.Errorf("linspace(%v, %d) = %v, want %v", tt.end, tt.steps, got, tt.want)
		}
	}
}

// TestPositions: patches in the processor's merge-block order, each with
// its row and column in the picture.
func TestPositions(t *testing.T) {
	tw := &Tower{c: Config{Merge: 2}}
	rows, cols := tw.positions([3]int{1, 2, 4})
	if want := []int32{0, 0, 1, 1, 0, 0, 1, 1}; !slices.Equal(rows, want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	if want := []int32{0, 1, 0, 1, 2, 3, 2, 3}; !slices.Equal(cols, want) {
		t.Errorf("cols %v, want %v", cols, want)
	}
}
