package gemma4vision

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
	"hearth/media"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name, in, err string
	}{
		{"defaults", `{}`, ""},
		{"null", `null`, ""},
		{"tiny", `{"hidden_size":32,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":16,"patch_size":2}`, ""},
		{"head not a multiple of 4", `{"head_dim":18}`, "multiple of 4"},
		{"kv heads", `{"num_attention_heads":3,"num_key_value_heads":2}`, "KV heads"},
		{"zero layers", `{"num_hidden_layers":0}`, `"num_hidden_layers"`},
		{"other rope", `{"rope_parameters":{"rope_type":"default","rope_theta":100}}`, "rope_type"},
		{"bad theta", `{"rope_parameters":{"rope_type":"axial","rope_theta":0}}`, "rope_theta"},
		{"not an object", `[1]`, "vision_config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseConfig(json.RawMessage(tt.in))
			if tt.err == "" {
				if err != nil {
					t.Fatalf("ParseConfig(%s) = %v", tt.in, err)
				}
				if c.Rope.Theta != 100 || c.Pool != 3 || c.Act != "gelu_pytorch_tanh" {
					t.Errorf("defaults: theta %v, pool %d, act %q", c.Rope.Theta, c.Pool, c.Act)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ParseConfig(%s) = %v, want an error about %s", tt.in, err, tt.err)
			}
		})
	}
}

// TestHalfPositions: patches row-major, each head's first half at the
// patch's column and its second half at its row.
func TestHalfPositions(t *testing.T) {
	got := halfPositions(2, 3, 2)
	want := []int32{0, 0, 0, 0, 1, 0, 1, 0, 2, 0, 2, 0, 0, 1, 0, 1, 1, 1, 1, 1, 2, 1, 2, 1}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestBadPixels: pixel values that do not fit the tower are an error
// naming the shape, never a crash.
func TestBadPixels(t *testing.T) {
	b := cpu.New(cpu.Options{})
	defer b.Close()
	tw := &Tower{c: Config{Hidden: 8, PatchSize: 2, Pool: 3, PosSize: 10}}
	for _, px := range []media.Pixels{
		{},
		{Data: make([]float32, 8*12), Shape: []int{9, 12}, Grid: [3]int{1, 3, 3}},    // too few values
		{Data: make([]float32, 4*12), Shape: []int{4, 12}, Grid: [3]int{1, 2, 2}},    // not a multiple of the pool
		{Data: make([]float32, 9*12), Shape: []int{9, 11}, Grid: [3]int{1, 3, 3}},    // patch width
		{Data: make([]float32, 9*12), Shape: []int{9, 12}, Grid: [3]int{2, 3, 3}},    // frames
		{Data: make([]float32, 36*12), Shape: []int{36, 12}, Grid: [3]int{1, 3, 12}}, // past the position table
	} {
		if _, err := tw.Encode(tensor.NewGraph(b), px); err == nil || !strings.Contains(err.Error(), "gemma4 vision") {
			t.Errorf("Encode(%v grid %v) = %v, want an error", px.Shape, px.Grid, err)
		}
	}
}
