package registry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/family"
	"hearth/internal/testmodels"
)

// TestClassifyTestdataModels classifies every oracle-checked model: each
// manifest entry is green, so each must come out supported, with the
// quantization label its variant names and a parameter count that agrees
// across variants of one architecture.
func TestClassifyTestdataModels(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	// arch ("gemma4_kv" of gemma4_kv-q4g64: several archs share a
	// model_type) → params of its f32 variant
	arch := func(e testmodels.Entry) string { a, _, _ := strings.Cut(e.Name, "-"); return a }
	// a variant made from another config (qwen3_5_moe-q4g64 widens the
	// experts to fit its 64-wide groups) is not compared
	paramsOf, configOf := map[string]int64{}, map[string]string{}
	for _, e := range m.Entries {
		if e.Variant == "f32" {
			rec := classify(e.Path(), e.Path(), "", nil, nil)
			paramsOf[arch(e)] = rec.Params
			configOf[arch(e)] = architecture(t, e.Path())
		}
	}
	for _, e := range m.Entries {
		t.Run(e.Name, func(t *testing.T) {
			rec := classify(e.Path(), e.Path(), "", nil, nil)
			if rec.Tier == TierUnsupported || rec.Reason != "" || !rec.Servable() {
				t.Fatalf("tier %q, reason %q; the manifest says %s is supported", rec.Tier, rec.Reason, e.Name)
			}
			if rec.ModelType != e.ModelType {
				t.Errorf("model_type %q, want %q", rec.ModelType, e.ModelType)
			}
			if rec.Quantization != e.Variant {
				t.Errorf("quantization %q, want %q (the manifest's variant)", rec.Quantization, e.Variant)
			}
			st, err := os.Stat(filepath.Join(e.Path(), "model.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if rec.Bytes <= 0 || rec.Bytes >= st.Size() || st.Size()-rec.Bytes > 64<<10 {
				t.Errorf("bytes %d for a %d-byte file: want the file less its header", rec.Bytes, st.Size())
			}
			switch want := paramsOf[arch(e)]; {
			case e.Variant == "f32" && rec.Params != rec.Bytes/4:
				t.Errorf("an f32 checkpoint of %d bytes has %d params, want %d", rec.Bytes, rec.Params, rec.Bytes/4)
			case e.Variant == "bf16" && rec.Params != rec.Bytes/2:
				t.Errorf("a bf16 checkpoint of %d bytes has %d params, want %d", rec.Bytes, rec.Params, rec.Bytes/2)
			case want != 0 && rec.Params != want && architecture(t, e.Path()) == configOf[arch(e)]:
				t.Errorf("%d params, but the f32 variant of %s has %d", rec.Params, arch(e), want)
			}
			if rec.ContextTokens <= 0 || len(rec.Shape.Layers) == 0 || rec.Shape.WeightBytes != rec.Bytes {
				t.Errorf("context %d, shape %+v: want both filled", rec.ContextTokens, rec.Shape)
			}
			if rec.Profile.Graph != rec.Family || rec.Profile.Source == "" || rec.Fidelity == "" {
				t.Errorf("profile %+v, fidelity %q, family %q", rec.Profile, rec.Fidelity, rec.Family)
			}
		})
	}
}

// architecture is dir's config.json without the keys a variant changes
// (dtype, quantization), as canonical JSON.
func architecture(t *testing.T, dir string) string {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dtype", "torch_dtype", "quantization", "quantization_config"} {
		delete(c, k)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestClassifyBroken covers configs and weights that must come out
// unsupported with a reason, not crash and not pass.
func TestClassifyBroken(t *testing.T) {
	base := modelFiles(t, "qwen3-f32")
	weightsOf := func(files []cacheFile) []byte {
		for _, f := range files {
			if f.name == "model.safetensors" {
				return f.data
			}
		}
		return nil
	}
	w := weightsOf(base)
	tests := []struct {
		name     string
		files    []cacheFile
		wantType string
		reason   string
	}{
		{"made-up model_type", editConfig(t, base, func(m map[string]any) { m["model_type"] = "made_up_lm" }), "made_up_lm", `unsupported model_type "made_up_lm" (supported: `},
		{"no model_type", editConfig(t, base, func(m map[string]any) { delete(m, "model_type") }), "", `missing "model_type"`},
		{"bad head count", editConfig(t, base, func(m map[string]any) { m["num_key_value_heads"] = 3 }), "", `"num_key_value_heads" 3 must divide`},
		{"missing config.json", dropFile(base, "config.json"), "", "no config.json"},
		{"config not JSON", replaceFile(base, "config.json", []byte("model_type: llama")), "", "config.json: not a JSON object"},
		{"truncated safetensors", replaceFile(base, "model.safetensors", w[:len(w)-100]), "qwen3", "(incomplete download?)"},
		{"header only", replaceFile(base, "model.safetensors", w[:6]), "qwen3", "too few for a safetensors header"},
		{"no weights", dropFile(base, "model.safetensors"), "qwen3", "no model.safetensors"},
		{"fp8 checkpoint", editConfig(t, base, func(m map[string]any) {
			m["quantization_config"] = map[string]any{"quant_method": "fp8", "fmt": "e4m3"}
		}), "qwen3", `quant_method "fp8"`},
		{"bad MLX bits", editConfig(t, base, func(m map[string]any) { m["quantization"] = map[string]any{"bits": 7, "group_size": 64} }), "qwen3", "bits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				mustWrite(t, filepath.Join(dir, f.name), f.data)
			}
			rec := classify(dir, dir, "", nil, nil)
			if rec.Tier != TierUnsupported || rec.Servable() || rec.Err() == nil {
				t.Fatalf("tier %q servable %v; want unsupported", rec.Tier, rec.Servable())
			}
			if !strings.Contains(rec.Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", rec.Reason, tt.reason)
			}
			if rec.ModelType != tt.wantType {
				t.Errorf("model_type %q, want %q", rec.ModelType, tt.wantType)
			}
		})
	}
}

func TestCapabilities(t *testing.T) {
	tests := []struct {
		name    string
		fam     family.Caps
		present family.Caps // the towers the checkpoint holds
		want    string
	}{
		{"text only", family.Tools, 0, "tools"},
		{"vision family without its tower", family.Vision | family.Audio | family.Tools, 0, "tools"},
		{"vision tower present", family.Vision | family.Audio | family.Tools, family.Vision, "tools, vision"},
		{"both towers", family.Vision | family.Audio, family.Vision | family.Audio, "audio, vision"},
		{"tower the family cannot run", family.Tools, family.Vision, "tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(capabilities(tt.fam, tt.present), ", "); got != tt.want {
				t.Errorf("capabilities = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDrafterNames(t *testing.T) {
	for name, want := range map[string]bool{
		"google/gemma-3n-E2B_assistant": true, "org/Qwen3-0.6B-draft": true, "org/x-Drafter": true,
		"Qwen/Qwen3-0.6B": false, "org/drafted-model": false, "/models/llama_assistant": true,
	} {
		if got := drafterName(name); got != want {
			t.Errorf("drafterName(%q) = %v, want %v", name, got, want)
		}
	}
}
