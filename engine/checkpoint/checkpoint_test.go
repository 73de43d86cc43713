package checkpoint

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/internal/testmodels"
)

func TestReadModel(t *testing.T) {
	for _, tt := range []struct {
		model, quant string
		quantized    bool
	}{
		{"qwen3-f32", "f32", false},
		{"llama-bf16", "bf16", false},
		{"llama-q4g64", "q4g64", true},
		{"llama-q8g32", "q8g32", true},
	} {
		t.Run(tt.model, func(t *testing.T) {
			dir := filepath.Join(testmodels.Root(), tt.model)
			c, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(filepath.Join(dir, "config.json"))
			if c.Dir != dir || string(c.ConfigJSON) != string(raw) || c.Config.ModelType == "" {
				t.Errorf("dir %q, config %d bytes, model_type %q", c.Dir, len(c.ConfigJSON), c.Config.ModelType)
			}
			if c.Weights == nil || c.Weights.ParamCount == 0 || c.Weights.Bytes == 0 {
				t.Fatalf("weights %+v", c.Weights)
			}
			if got := c.Quantization(); got != tt.quant {
				t.Errorf("Quantization() = %q, want %q", got, tt.quant)
			}
			if (c.Quant.Default != nil) != tt.quantized {
				t.Errorf("Quant = %+v, quantized %v", c.Quant, tt.quantized)
			}
			if c.Towers != 0 {
				t.Errorf("towers %v in a text model", c.Towers)
			}
		})
	}
}

// TestReadBroken: without a config there is no Checkpoint; with one, a
// fault in the rest comes back with the Checkpoint, so a listing can
// still name the model type.
func TestReadBroken(t *testing.T) {
	t.Run("no config", func(t *testing.T) {
		c, err := Read(t.TempDir())
		if c != nil || !errors.Is(err, ErrNoConfig) {
			t.Errorf("Read = %v, %v; want ErrNoConfig", c, err)
		}
	})
	t.Run("config too big", func(t *testing.T) {
		dir := t.TempDir()
		big := `{"model_type": "llama", "pad": "` + strings.Repeat("x", maxConfigBytes) + `"}`
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(big), 0o644)
		if c, err := Read(dir); c != nil || err == nil || !strings.Contains(err.Error(), "byte limit") {
			t.Errorf("Read = %v, %v; want the size limit", c, err)
		}
	})
	t.Run("truncated weights", func(t *testing.T) {
		dir := testmodels.Copy(t, "qwen3-f32")
		p := filepath.Join(dir, "model.safetensors")
		st, _ := os.Stat(p)
		os.Truncate(p, st.Size()-100)
		c, err := Read(dir)
		if err == nil || c == nil || c.Config.ModelType != "qwen3" || c.Weights != nil {
			t.Errorf("Read = %+v, %v; want the config and a weights error", c, err)
		}
	})
	t.Run("unreadable quantization", func(t *testing.T) {
		dir := testmodels.Copy(t, "qwen3-f32")
		raw, _ := os.ReadFile(filepath.Join(dir, "config.json"))
		raw = []byte(strings.Replace(string(raw), "{", `{"quantization_config": {"quant_method": "gptq", "bits": 4},`, 1))
		os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644)
		c, err := Read(dir)
		if err == nil || c == nil || c.Weights == nil {
			t.Fatalf("Read = %+v, %v; want the checkpoint and a quantization error", c, err)
		}
		if got := c.Quantization(); got != "gptq" {
			t.Errorf("Quantization() = %q, want gptq", got)
		}
	})
	t.Run("dangling link", func(t *testing.T) {
		dir := testmodels.Copy(t, "qwen3-f32")
		os.Remove(filepath.Join(dir, "model.safetensors"))
		os.Symlink(filepath.Join(dir, "blobs", "missing"), filepath.Join(dir, "model.safetensors"))
		c, err := Read(dir)
		if err == nil || !strings.Contains(err.Error(), "model.safetensors: the download did not finish") || c == nil {
			t.Errorf("Read = %v, %v; want the unfinished download named", c, err)
		}
	})
}

func TestQuantizationWithoutHeaders(t *testing.T) {
	for dtype, want := range map[string]string{"bfloat16": "bf16", "float16": "f16", "float32": "f32", "int4": ""} {
		cfg := &config.Config{Text: map[string]json.RawMessage{"torch_dtype": json.RawMessage(`"` + dtype + `"`)}}
		if got := (&Checkpoint{Config: cfg}).Quantization(); got != want {
			t.Errorf("torch_dtype %s: %q, want %q", dtype, got, want)
		}
	}
}

func TestQuantizationMostBytes(t *testing.T) {
	cfg := &config.Config{}
	sum := &weights.Summary{Tensors: []weights.Info{
		{Name: "a", DType: tensor.F32, Length: 100},
		{Name: "b", DType: tensor.BF16, Length: 300},
		{Name: "c", DType: tensor.F32, Length: 150},
	}}
	if got := (&Checkpoint{Config: cfg, Weights: sum}).Quantization(); got != "bf16" {
		t.Errorf("Quantization() = %q, want bf16 (300 bytes against f32's 250)", got)
	}
}

func TestTowers(t *testing.T) {
	tests := []struct {
		tensors []string
		want    family.Caps
	}{
		{[]string{"model.embed_tokens.weight"}, 0},
		{[]string{"model.language_model.embed_tokens.weight"}, 0},
		{[]string{"model.vision_tower.patch_embed.weight"}, family.Vision},
		{[]string{"vision_tower.x", "audio_tower.y"}, family.Vision | family.Audio},
		{[]string{"visual.blocks.0.attn.qkv.weight"}, family.Vision},
		{[]string{"visual.merger.mlp.0.weight"}, family.Vision},
		{[]string{"model.audio_tower.conv.weight"}, family.Audio},
		{[]string{"model.layers.0.visual_gate.weight"}, 0}, // only looks like one
	}
	for _, tt := range tests {
		sum := &weights.Summary{}
		for _, n := range tt.tensors {
			sum.Tensors = append(sum.Tensors, weights.Info{Name: n})
		}
		if got := towers(sum); got != tt.want {
			t.Errorf("towers(%v) = %v, want %v", tt.tensors, got, tt.want)
		}
	}
}
