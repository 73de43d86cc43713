// Tests of the Binder and the weight audit: dense and quantized Linear,
// per-path quantization overrides, shape checks, ignore globs, and Scan's
// logical parameter count on a quantized checkpoint.

package weights

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"hearth/engine/tensor"
)

// quantized quantizes a random [rows, cols] matrix as name.
func quantized(t testing.TB, rng *rand.Rand, name string, rows, cols int, q tensor.Quant) (tensor.Weight, []float32) {
	t.Helper()
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = rng.Float32()*2 - 1
	}
	qw, err := Quantize(w, rows, cols, q, tensor.BF16)
	if err != nil {
		t.Fatal(err)
	}
	qw.Name = name
	return qw, w
}

func TestAudit(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	dir := t.TempDir()
	writeFile(t, dir, "model.safetensors",
		randF32(rng, "a.weight", 2, 2),
		randF32(rng, "b.weight", 2, 2),
		randF32(rng, "b.bias", 2),
		randF32(rng, "extra.weight", 2),
		randF32(rng, "layers.0.rotary_emb.inv_freq", 2),
		randF32(rng, "layers.1.rotary_emb.inv_freq", 2),
	)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	b := NewBinder(s, QuantConfig{})
	if !b.Has("extra.weight") { // Has does not consume
		t.Fatal("Has(extra.weight) = false")
	}
	if w := b.Tensor("a.weight"); w.Name != "a.weight" || w.DType != tensor.F32 || !reflect.DeepEqual(w.Shape, []int{2, 2}) || len(w.Data) != 16 {
		t.Errorf("Tensor(a.weight) = %+v", w)
	}
	if w := b.Linear("b"); w.Name != "b.weight" || w.Quantized() {
		t.Errorf("Linear(b) = %+v, want dense b.weight", w)
	}
	if w, ok := b.Optional("b.bias"); !ok || len(w.Data) != 8 {
		t.Errorf("Optional(b.bias) = %+v, %v", w, ok)
	}
	if _, ok := b.Optional("c.bias"); ok { // absent and fine
		t.Error("Optional(c.bias) = true")
	}
	if w := b.Tensor("c.weight"); w.Data != nil || w.Name != "" {
		t.Errorf("Tensor(c.weight) on a miss = %+v, want zero", w)
	}
	b.Linear("d") // missing d.weight
	if b.Err() != nil {
		t.Errorf("Err = %v, want nil (misses are not structural)", b.Err())
	}

	tests := []struct {
		name            string
		ignore          []string
		missing, unused []string
	}{
		{"no ignores", nil, []string{"c.weight", "d.weight"},
			[]string{"extra.weight", "layers.0.rotary_emb.inv_freq", "layers.1.rotary_emb.inv_freq"}},
		{"glob across dots", []string{"*.rotary_emb.inv_freq"}, []string{"c.weight", "d.weight"}, []string{"extra.weight"}},
		{"exact name and star", []string{"extra.weight", "layers.*"}, []string{"c.weight", "d.weight"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := b.Audit(tt.ignore)
			var ae *AuditError
			if !errors.As(err, &ae) {
				t.Fatalf("Audit = %v, want *AuditError", err)
			}
			if !reflect.DeepEqual(ae.Missing, tt.missing) || !reflect.DeepEqual(ae.Unused, tt.unused) {
				t.Errorf("Audit missing %v unused %v; want %v, %v", ae.Missing, ae.Unused, tt.missing, tt.unused)
			}
		})
	}

	clean := NewBinder(s, QuantConfig{})
	for _, n := range s.Names() {
		clean.Tensor(n)
	}
	if err := clean.Audit(nil); err != nil {
		t.Errorf("Audit after consuming everything = %v, want nil", err)
	}
}

func TestAuditErrorMessage(t *testing.T) {
	var many []string
	for i := range 322 {
		many = append(many, fmt.Sprintf("model.layers.%03d.mlp.up_proj.weight", i))
	}
	tests := []struct {
		name string
		err  AuditError
		want []string
		not  []string
	}{
		{"missing only", AuditError{Missing: []string{"b", "a"}},
			[]string{`weight audit: 2 tensors missing: "a", "b"`, "incomplete download"}, nil},
		{"unused only", AuditError{Unused: []string{"x"}},
			[]string{`1 tensor in the checkpoint unused: "x"`, "a model variant Hearth does not support"}, []string{"incomplete download"}},
		{"truncated", AuditError{Missing: many},
			[]string{"322 tensors missing", `"model.layers.009.mlp.up_proj.weight" … and 312 more`}, []string{"model.layers.010."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Error() = %q, want it to contain %q", msg, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(msg, n) {
					t.Errorf("Error() = %q, want no %q", msg, n)
				}
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*.rotary_emb.inv_freq", "model.layers.0.self_attn.rotary_emb.inv_freq", true},
		{"*.rotary_emb.inv_freq", "rotary_emb.inv_freq", false},
		{"model.*.bias", "model.layers.3.q_proj.bias", true},
		{"model.*.bias", "model.layers.3.q_proj.weight", false},
		{"lm_head.weight", "lm_head.weight", true},
		{"lm_head.weight", "lm_head.weights", false},
		{"*", "", true},
		{"a*a", "a", false},
		{"a*b*c", "abxbc", true},
		{"a*b*c", "acb", false},
		{"*.", "x.", true},
		{"vision_tower.*", "vision_tower.blocks.0.weight", true},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// quantDir writes a 4-bit group-64 model whose embed_tokens is 8-bit group
// 32 and whose lm_head is dense, with a config.json saying so.
func quantDir(t *testing.T) (dir string, embed []float32, q QuantConfig) {
	t.Helper()
	rng := rand.New(rand.NewPCG(61, 62))
	dir = t.TempDir()
	emb, embed := quantized(t, rng, "model.embed_tokens", 64, 128, tensor.Quant{Bits: 8, GroupSize: 32})
	qp, _ := quantized(t, rng, "model.layers.0.self_attn.q_proj", 32, 128, tensor.Quant{Bits: 4, GroupSize: 64})
	writeFile(t, dir, "model.safetensors", emb, qp,
		randF32(rng, "lm_head.weight", 64, 128),
		randF32(rng, "model.norm.weight", 128))
	q, err := ParseQuantConfig(json.RawMessage(`{"group_size": 64, "bits": 4,
		"model.embed_tokens": {"group_size": 32, "bits": 8}, "lm_head": false}`))
	if err != nil {
		t.Fatal(err)
	}
	return dir, embed, q
}

func TestBinderQuantized(t *testing.T) {
	dir, embed, q := quantDir(t)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := NewBinder(s, q)

	emb := b.Linear("model.embed_tokens")
	if emb.Name != "model.embed_tokens" || emb.DType != tensor.U32 || !reflect.DeepEqual(emb.Shape, []int{64, 128}) ||
		!reflect.DeepEqual(emb.Quant, &tensor.Quant{Bits: 8, GroupSize: 32}) || emb.ScaleDType != tensor.BF16 ||
		len(emb.Data) != 64*128 || len(emb.Scales) != 64*4*2 || len(emb.Biases) != 64*4*2 {
		t.Errorf("Linear(embed_tokens) = %v %v %v %v, %d/%d/%d bytes", emb.DType, emb.Shape, emb.Quant, emb.ScaleDType, len(emb.Data), len(emb.Scales), len(emb.Biases))
	}
	// The override matters: the file's rows dequantize back to the original.
	row := make([]float32, 128)
	emb.DecodeRow(5, row)
	for j, v := range row {
		if d := v - embed[5*128+j]; d > 0.01 || d < -0.01 {
			t.Fatalf("embed row 5 col %d = %g, want about %g", j, v, embed[5*128+j])
		}
	}
	qp := b.Linear("model.layers.0.self_attn.q_proj")
	if !reflect.DeepEqual(qp.Shape, []int{32, 128}) || !reflect.DeepEqual(qp.Quant, &tensor.Quant{Bits: 4, GroupSize: 64}) {
		t.Errorf("Linear(q_proj) = %v %v, want [32 128] 4-bit group 64", qp.Shape, qp.Quant)
	}
	if head := b.Linear("lm_head"); head.Quantized() || head.DType != tensor.F32 || head.Name != "lm_head.weight" {
		t.Errorf("Linear(lm_head) = %v quantized=%v, want dense F32 (config says false)", head.DType, head.Quantized())
	}
	b.Tensor("model.norm.weight")
	if err := b.Audit(nil); err != nil {
		t.Errorf("Audit = %v, want nil: weights, scales and biases all consumed", err)
	}
}

func TestBinderQuantErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	q4g32, _ := quantized(t, rng, "p", 4, 128, tensor.Quant{Bits: 4, GroupSize: 32})
	q8g128, _ := quantized(t, rng, "p", 4, 128, tensor.Quant{Bits: 8, GroupSize: 128})
	noBiases := q4g32
	noBiases.Name = "nb"
	tests := []struct {
		name   string
		w      tensor.Weight
		config string
		want   string // "" = no error; then wantQ is checked
		wantQ  tensor.Quant
	}{
		{"config gives bits", q4g32, `{"group_size": 32, "bits": 4}`, "", tensor.Quant{Bits: 4, GroupSize: 32}},
		{"inferred when unambiguous", q8g128, ``, "", tensor.Quant{Bits: 8, GroupSize: 128}},
		{"ambiguous without config", q4g32, ``,
			`"p": weight shape [4 16] and scales shape [4 4] fit 2-bit group 64 or 4-bit group 32; config.json must say which`, tensor.Quant{}},
		{"config disagrees with shapes", q4g32, `{"group_size": 64, "bits": 4}`,
			`"p": weight shape [4 16] and scales shape [4 4] do not fit 4-bit quantization with group size 64`, tensor.Quant{}},
		{"config says not quantized", q4g32, `{"group_size": 64, "bits": 4, "p": false}`,
			`"p": config.json quantization marks it as not quantized, but the checkpoint has "p.scales"`, tensor.Quant{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "model.safetensors", tt.w)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			q, err := ParseQuantConfig(json.RawMessage(tt.config))
			if err != nil {
				t.Fatal(err)
			}
			b := NewBinder(s, q)
			got := b.Linear("p")
			if tt.want == "" {
				if b.Err() != nil || got.Quant == nil || *got.Quant != tt.wantQ {
					t.Errorf("Linear = %v, Err %v; want %v", got.Quant, b.Err(), tt.wantQ)
				}
				return
			}
			if err := b.Err(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Err = %v, want it to contain %q", err, tt.want)
			}
			if got.Data != nil {
				t.Errorf("Linear on error returned data")
			}
			if err := b.Audit(nil); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Audit = %v, want the structural error too", err)
			}
		})
	}
}

func TestBinderBadTensors(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	qw, _ := quantized(t, rng, "p", 4, 128, tensor.Quant{Bits: 4, GroupSize: 32})
	scales := tensor.Weight{Name: "p.scales", DType: tensor.BF16, Shape: []int{4, 4}, Data: qw.Scales}
	words := tensor.Weight{Name: "p.weight", DType: tensor.U32, Shape: []int{4, 16}, Data: qw.Data}
	tests := []struct {
		name string
		ws   []tensor.Weight
		want string
	}{
		{"scales without biases", []tensor.Weight{words, scales}, `"p" has scales but no biases`},
		{"float weight with scales", []tensor.Weight{randF32(rng, "p.weight", 4, 16), scales, {Name: "p.biases", DType: tensor.BF16, Shape: []int{4, 4}, Data: qw.Biases}},
			`tensor "p.weight" has dtype F32; a quantized weight must be U32`},
		{"biases of another dtype", []tensor.Weight{words, scales, randF32(rng, "p.biases", 4, 4)}, `"p": scales are BF16 and biases F32`},
		{"biases of another shape", []tensor.Weight{words, scales, {Name: "p.biases", DType: tensor.BF16, Shape: []int{2, 8}, Data: qw.Biases}},
			`"p": scales shape [4 4] and biases shape [2 8] differ`},
		{"dense integer weight", []tensor.Weight{{Name: "p.weight", DType: tensor.I32, Shape: []int{1}, Data: make([]byte, 4)}},
			`tensor "p.weight" has dtype I32; a dense linear weight must be F32, F16 or BF16`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "model.safetensors", tt.ws...)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			b := NewBinder(s, QuantConfig{Default: &tensor.Quant{Bits: 4, GroupSize: 32}})
			b.Linear("p")
			if err := b.Err(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestScanQuantizedParamCount(t *testing.T) {
	dir, _, q := quantDir(t)
	s, err := Scan(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	// embed 64×128 + q_proj 32×128 (logical) + lm_head 64×128 + norm 128.
	if want := int64(64*128 + 32*128 + 64*128 + 128); s.ParamCount != want {
		t.Errorf("ParamCount = %d, want %d", s.ParamCount, want)
	}
	var bytes int64
	for _, in := range s.Tensors {
		bytes += in.Length
	}
	// Packed: embed 64×128 bytes + 2×64×4×2 (bf16 scales, biases); q_proj
	// 32×64 + 2×32×2×2; dense lm_head and norm in f32.
	if want := int64(64*128 + 2*64*4*2 + 32*64 + 2*32*2*2 + 4*64*128 + 4*128); s.Bytes != want || bytes != want {
		t.Errorf("Bytes = %d (sum %d), want %d", s.Bytes, bytes, want)
	}
}

func TestScanQuantizedNeedsConfig(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	dir := t.TempDir()
	qw, _ := quantized(t, rng, "p", 4, 128, tensor.Quant{Bits: 4, GroupSize: 64})
	writeFile(t, dir, "model.safetensors", qw)
	if _, err := Scan(dir, QuantConfig{}); err == nil || !strings.Contains(err.Error(), "config.json must say which") {
		t.Errorf("Scan without config = %v, want an ambiguity error", err)
	}
	q, err := ParseQuantConfig(json.RawMessage(`{"group_size": 64, "bits": 4}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Scan(dir, q)
	if err != nil {
		t.Fatal(err)
	}
	if s.ParamCount != 4*128 {
		t.Errorf("ParamCount = %d, want %d", s.ParamCount, 4*128)
	}
}
