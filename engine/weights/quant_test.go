// Tests of ParseQuantConfig and QuantConfig.For on real config shapes.

package weights

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"hearth/engine/tensor"
)

func TestParseQuantConfig(t *testing.T) {
	q := func(bits, group int) *tensor.Quant { return &tensor.Quant{Bits: bits, GroupSize: group} }
	tests := []struct {
		name string
		raw  string
		want QuantConfig
	}{
		{"absent", ``, QuantConfig{}},
		{"null", ` null `, QuantConfig{}},
		{"empty object", `{}`, QuantConfig{}},
		{"mlx-community 4-bit", `{"group_size": 64, "bits": 4}`, QuantConfig{Default: q(4, 64)}},
		{"with mode", `{"group_size": 32, "bits": 8, "mode": "affine"}`, QuantConfig{Default: q(8, 32)}},
		{"per-path override and false", `{"group_size": 64, "bits": 4,
			"model.embed_tokens": {"group_size": 32, "bits": 8},
			"model.layers.0.mlp.gate": false,
			"lm_head": {"bits": 6}}`,
			QuantConfig{Default: q(4, 64), PerPath: map[string]*tensor.Quant{
				"model.embed_tokens":      q(8, 32),
				"model.layers.0.mlp.gate": nil,
				"lm_head":                 q(6, 64), // group_size inherited
			}}},
		{"true means default", `{"group_size": 128, "bits": 2, "x": true}`, QuantConfig{Default: q(2, 128), PerPath: map[string]*tensor.Quant{"x": q(2, 128)}}},
		{"per-path only", `{"a": {"group_size": 64, "bits": 3}}`, QuantConfig{PerPath: map[string]*tensor.Quant{"a": q(3, 64)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQuantConfig(json.RawMessage(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseQuantConfig = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseQuantConfigErrors(t *testing.T) {
	tests := []struct{ name, raw, want string }{
		{"not an object", `[4]`, "quantization is not a JSON object"},
		{"bad JSON", `{"bits":`, "quantization is not a JSON object"},
		{"bits 7", `{"group_size": 64, "bits": 7}`, "quantization: bits 7 is not supported (supported: 2, 3, 4, 5, 6, 8)"},
		{"group 48", `{"group_size": 48, "bits": 4}`, "quantization: group_size 48 is not supported (supported: 32, 64, 128)"},
		{"per-path bits", `{"group_size": 64, "bits": 4, "model.embed_tokens": {"group_size": 64, "bits": 16}}`, `quantization: "model.embed_tokens": bits 16 is not supported`},
		{"per-path group", `{"group_size": 64, "bits": 4, "lm_head": {"group_size": 16, "bits": 4}}`, `quantization: "lm_head": group_size 16 is not supported`},
		{"bits without group", `{"bits": 4}`, "quantization: bits given without group_size"},
		{"group without bits", `{"group_size": 64}`, "quantization: group_size given without bits"},
		{"per-path without default", `{"a": {"bits": 4}}`, `quantization: "a": bits given without group_size`},
		{"per-path empty", `{"group_size": 64, "bits": 4, "a": {}}`, `quantization: "a" has neither bits nor group_size`},
		{"fractional bits", `{"group_size": 64, "bits": 4.5}`, "quantization: bits 4.5 is not an integer"},
		{"string bits", `{"group_size": 64, "bits": "4"}`, `quantization: bits "4" is not an integer`},
		{"mode mxfp4", `{"group_size": 32, "bits": 4, "mode": "mxfp4"}`, `quantization: mode "mxfp4" is not supported (supported: "affine")`},
		{"per-path mode", `{"group_size": 64, "bits": 4, "a": {"group_size": 32, "bits": 4, "mode": "nvfp4"}}`, `quantization: "a": mode "nvfp4" is not supported`},
		{"scalar entry", `{"group_size": 64, "bits": 4, "lm_head": 8}`, `quantization: "lm_head" is 8; want an object with bits and group_size, or false`},
		{"true without default", `{"a": true}`, `quantization: "a" is true but there are no top-level bits and group_size`},
		{"not mlx", `{"quant_method": "gptq", "bits": 4, "group_size": 128}`, `quantization: quant_method "gptq" is not MLX affine quantization`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQuantConfig(json.RawMessage(tt.raw))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseQuantConfig = %+v, %v; want error containing %q", got, err, tt.want)
			}
		})
	}
}

func TestQuantConfigFor(t *testing.T) {
	q, err := ParseQuantConfig(json.RawMessage(`{"group_size": 64, "bits": 4,
		"model.embed_tokens": {"group_size": 32, "bits": 8}, "model.layers.0.mlp.gate": false}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want *tensor.Quant
	}{
		{"model.layers.0.self_attn.q_proj", &tensor.Quant{Bits: 4, GroupSize: 64}},
		{"model.embed_tokens", &tensor.Quant{Bits: 8, GroupSize: 32}},
		{"model.layers.0.mlp.gate", nil},
		{"model.layers.1.mlp.gate", &tensor.Quant{Bits: 4, GroupSize: 64}}, // exact paths only
	}
	for _, tt := range tests {
		if got := q.For(tt.path); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("For(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
	q.For("model.embed_tokens").Bits = 2 // a caller's edit must not leak into the config
	if got := q.For("model.embed_tokens").Bits; got != 8 {
		t.Errorf("For returned a shared pointer: bits became %d", got)
	}
	if got := (QuantConfig{}).For("anything"); got != nil {
		t.Errorf("zero QuantConfig.For = %v, want nil", got)
	}
}

// TestQuantLabel: the one label hearth ls, /api/ps and /api/show show.
func TestQuantLabel(t *testing.T) {
	tests := []struct{ raw, want string }{
		{``, ""},
		{`null`, ""},
		{`{"bits": 4, "group_size": 64}`, "q4g64"},
		{`{"bits": 8, "group_size": 32, "lm_head": false}`, "q8g32"},
		{`{"model.layers.0.mlp.down_proj": {"bits": 8, "group_size": 64}}`, "mixed"},
	}
	for _, tt := range tests {
		qc, err := ParseQuantConfig(json.RawMessage(tt.raw))
		if err != nil {
			t.Fatalf("ParseQuantConfig(%s): %v", tt.raw, err)
		}
		if got := qc.Label(); got != tt.want {
			t.Errorf("Label of %s = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// TestGroup16 holds the group-16 rule: a config.json may not name it and
// Write does not store it (MLX has no such group), but the quantizer and
// the binder's shape check, which GGUF's repacked Q2_K, Q3_K and Q6_K go
// through with a per-path entry, take it.
func TestGroup16(t *testing.T) {
	if _, err := ParseQuantConfig(json.RawMessage(`{"bits": 6, "group_size": 16}`)); err == nil || !strings.Contains(err.Error(), "group_size 16") {
		t.Errorf("config.json with group_size 16: %v", err)
	}
	q := tensor.Quant{Bits: 6, GroupSize: 16}
	w, err := Quantize(make([]float32, 2*48), 2, 48, q, tensor.F32)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Scales) != 2*3*4 {
		t.Errorf("%d scale bytes, want 24", len(w.Scales))
	}
	w.Name = "w"
	if err := Write(t.TempDir()+"/m.safetensors", []tensor.Weight{w}, nil); err == nil || !strings.Contains(err.Error(), "group_size 16") {
		t.Errorf("Write of a group-16 weight: %v", err)
	}
	shape, err := quantLogicalShape("w", []int{2, 48 * 6 / 32}, []int{2, 3}, q)
	if err != nil || !reflect.DeepEqual(shape, []int{2, 48}) {
		t.Errorf("quantLogicalShape = %v, %v; want [2 48]", shape, err)
	}
	if _, err := quantLogicalShape("w", []int{2, 9}, []int{2, 3}, tensor.Quant{Bits: 6, GroupSize: 24}); err == nil {
		t.Error("group 24 accepted")
	}
}
