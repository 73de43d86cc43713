package engine_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/family"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

func TestLoadRejectsBrokenCheckpoints(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   []string
	}{
		{"truncated file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			fi, _ := os.Stat(p)
			if err := os.Truncate(p, fi.Size()-100); err != nil {
				t.Fatal(err)
			}
		}, []string{"model.safetensors", "incomplete download"}},
		{"bad header", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			raw, _ := os.ReadFile(p)
			copy(raw[8:], "{not json")
			os.WriteFile(p, raw, 0o644)
		}, []string{"model.safetensors", "header"}},
		{"missing tensor", func(t *testing.T, dir string) {
			testmodels.Rewrite(t, dir, func(ws []tensor.Weight) []tensor.Weight {
				var out []tensor.Weight
				for _, w := range ws {
					if w.Name != "model.layers.1.mlp.up_proj.weight" {
						out = append(out, w)
					}
				}
				return out
			})
		}, []string{"missing", "model.layers.1.mlp.up_proj.weight"}},
		{"extra tensor", func(t *testing.T, dir string) {
			testmodels.Rewrite(t, dir, func(ws []tensor.Weight) []tensor.Weight {
				return append(ws, tensor.Weight{Name: "model.layers.0.mlp.surprise.weight", DType: tensor.F32, Shape: []int{2}, Data: make([]byte, 8)})
			})
		}, []string{"model.layers.0.mlp.surprise.weight"}},
		{"wrong shape", func(t *testing.T, dir string) {
			testmodels.Rewrite(t, dir, func(ws []tensor.Weight) []tensor.Weight {
				for i, w := range ws {
					if w.Name == "model.layers.0.mlp.up_proj.weight" {
						ws[i].Shape = []int{w.Shape[1], w.Shape[0]}
					}
				}
				return ws
			})
		}, []string{"model.layers.0.mlp.up_proj", "[64 128]", "[128 64]"}},
		{"unsupported model_type", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "config.json")
			raw, _ := os.ReadFile(p)
			var c map[string]any
			json.Unmarshal(raw, &c)
			c["model_type"] = "rwkv7"
			raw, _ = json.Marshal(c)
			os.WriteFile(p, raw, 0o644)
		}, []string{`unsupported model_type "rwkv7"`, "llama", "mistral", "qwen2", "qwen3"}},
		{"no config", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "config.json")) }, []string{"config.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testmodels.Copy(t, "llama-f32")
			tt.break_(t, dir)
			m, err := engine.Load(dir, engine.Options{})
			if err == nil {
				m.Close()
				t.Fatal("Load succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load error = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadErrorTypes(t *testing.T) {
	dir := testmodels.Copy(t, "qwen3-f32")
	testmodels.Rewrite(t, dir, func(ws []tensor.Weight) []tensor.Weight { return ws[1:] })
	_, err := engine.Load(dir, engine.Options{})
	var audit *weights.AuditError
	if !errors.As(err, &audit) || len(audit.Missing) != 1 {
		t.Errorf("Load error = %v, want a *weights.AuditError with one missing tensor", err)
	}
	dir = testmodels.Copy(t, "qwen3-f32")
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"mamba","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":1,"vocab_size":4}`), 0o644)
	if _, err := engine.Load(dir, engine.Options{}); !errors.Is(err, family.ErrUnsupported) {
		t.Errorf("Load error = %v, want family.ErrUnsupported", err)
	}
}

func TestUnknownBackend(t *testing.T) {
	_, err := engine.Load(filepath.Join(testmodels.Root(), "llama-f32"), engine.Options{Backend: "tpu"})
	if err == nil || !strings.Contains(err.Error(), `unknown backend "tpu" (auto, gpu or cpu)`) {
		t.Errorf("Load with backend tpu: error = %v", err)
	}
}

// TestEmulatedGPUSaysSo: --backend gpu on Mesa's software adapter
// (lavapipe, named llvmpipe; CI's only adapter) runs, and the backend's
// name, which the start lines print, says it is an emulation; auto never
// picks it.
func TestEmulatedGPUSaysSo(t *testing.T) {
	dir := filepath.Join(testmodels.Root(), "llama-f32")
	m, err := engine.Load(dir, engine.Options{Backend: "gpu"})
	testenv.Need(t, "a gpu backend", err == nil)
	got := m.Backend()
	m.Close()
	soft := strings.Contains(got, "llvmpipe")
	if soft != strings.HasSuffix(got, ", "+engine.EmulatedNote+")") {
		t.Errorf("Backend() = %q: the note should end it exactly when the adapter is llvmpipe", got)
	}
	if !soft {
		return
	}
	auto, err := engine.Load(dir, engine.Options{Backend: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	defer auto.Close()
	if got := auto.Backend(); got != "cpu" {
		t.Errorf("auto with only an emulated adapter runs on %q, want cpu", got)
	}
}
