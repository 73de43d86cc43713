package qwen35_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/config"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/family/qwen35"
	"hearth/engine/fit"
	"hearth/internal/testmodels"
)

// TestPublishedConfigs reads the config.json shapes of the published Qwen
// 3.5 sizes (testdata/configs, written from the published numbers) with no
// backend: each resolves to this targeted family; the parameters it binds
// land near the size the model is named for; and the fit estimate holds
// keys and values for the full-attention layers only, each DeltaNet layer
// a state that does not grow with the context.
//
// The names count the vision tower and the multi-token-prediction head too,
// which the text decoder does not bind (about 0.1–0.9B), and round: the
// small models sit further from their names than the large ones.
func TestPublishedConfigs(t *testing.T) {
	for _, tc := range []struct {
		file          string
		named, active float64 // billions; active 0 for dense
		tol           float64
	}{
		{"qwen3.5-0.8b", 0.8, 0, 0.07},
		{"qwen3.5-2b", 2, 0, 0.07},
		{"qwen3.5-4b", 4, 0, 0.07},
		{"qwen3.5-9b", 9, 0, 0.02},
		{"qwen3.5-27b", 27, 0, 0.02},
		{"qwen3.5-35b-a3b", 35, 3, 0.02},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "configs", tc.file+".json"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := config.Parse(raw, nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := families.Resolve(c)
			if err != nil || f != &qwen35.Family || f.Tier != family.Targeted {
				t.Fatalf("Resolve = %v, %v; want the targeted qwen3_5 family", f, err)
			}
			total, active, err := qwen35.ParamCount(c)
			if err != nil {
				t.Fatal(err)
			}
			if d := float64(total)/(tc.named*1e9) - 1; math.Abs(d) > tc.tol {
				t.Errorf("%.3fB parameters, %+.1f%% from the named %gB (want within %.0f%%)", float64(total)/1e9, 100*d, tc.named, 100*tc.tol)
			}
			if d := float64(active)/(tc.active*1e9) - 1; tc.active > 0 && math.Abs(d) > tc.tol {
				t.Errorf("%.3fB active parameters, %+.1f%% from the named %gB", float64(active)/1e9, 100*d, tc.active)
			}
			shape := families.Shape(c, total*2)
			var full, linear int
			var state int64
			for i, l := range shape.Layers {
				switch {
				case l.Kind == fit.Full && l.KVHeads == c.NumKeyValueHeads && l.HeadDim == c.HeadDim && (i+1)%4 == 0:
					full++
				case l.Kind == fit.Recurrent && l.StateBytes > 0 && (i+1)%4 != 0:
					linear++
					state += l.StateBytes
				default:
					t.Errorf("layer %d: %+v", i, l)
				}
			}
			if full != c.NumHiddenLayers/4 || linear != c.NumHiddenLayers-full {
				t.Errorf("%d full and %d linear layers of %d", full, linear, c.NumHiddenLayers)
			}
			kv := func(ctx int) int64 { return fit.Estimate(shape, fit.Options{ContextTokens: ctx}).KVBytes }
			perToken := int64(full) * 2 * int64(c.KVDim()) * fit.DefaultKVBytes
			if got, want := kv(4096), state+4096*perToken; got != want {
				t.Errorf("cache bytes at 4096 tokens %d, want %d", got, want)
			}
			if got, want := kv(32768)-kv(4096), (32768-4096)*perToken; got != want {
				t.Errorf("cache growth from 4096 to 32768 tokens %d, want %d (the full layers' keys and values only)", got, want)
			}
			t.Logf("%.3fB parameters (%.3fB active); cache %.0f MB at 32768 tokens, %.0f MB of it DeltaNet state",
				float64(total)/1e9, float64(active)/1e9, float64(kv(32768))/1e6, float64(state)/1e6)
		})
	}
}

// tiny parses the config of the oracle's tiny model name with edit applied.
func tiny(t *testing.T, name string, edit func(map[string]any)) (*config.Config, error) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testmodels.Root(), name, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	raw, _ = json.Marshal(m)
	return config.Parse(raw, nil)
}

// TestUnsupportedSwitches: a config this port would run wrong is a load
// error that names the key.
func TestUnsupportedSwitches(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"qwen3_5-f32", func(m map[string]any) {
			m["sliding_window"] = 8
			m["layer_types"] = []string{"linear_attention", "sliding_attention", "linear_attention", "full_attention"}
		}, `"layer_types"[1]`},
		{"qwen3_5-f32", func(m map[string]any) { m["hidden_act"] = "gelu" }, "hidden_act"},
		{"qwen3_5-f32", func(m map[string]any) { m["linear_num_value_heads"] = 3 }, "linear_num_value_heads"},
		{"qwen3_5-f32", func(m map[string]any) { m["linear_conv_kernel_dim"] = 1 }, "linear_conv_kernel_dim"},
		{"qwen3_5-f32", func(m map[string]any) {
			m["rope_parameters"].(map[string]any)["partial_rotary_factor"] = 2.0
		}, "partial_rotary_factor"},
		{"qwen3_5-f32", func(m map[string]any) {
			m["rope_parameters"].(map[string]any)["rope_type"] = "mrope"
		}, "rope type"},
		{"qwen3_5_moe-f32", func(m map[string]any) { m["decoder_sparse_step"] = 2 }, "decoder_sparse_step"},
		{"qwen3_5_moe-f32", func(m map[string]any) { m["mlp_only_layers"] = []int{0} }, "mlp_only_layers"},
		{"qwen3_5_moe-f32", func(m map[string]any) { m["num_experts_per_tok"] = 9 }, "num_experts_per_tok"},
	} {
		// refused while parsing, or by the family before it binds a tensor
		c, err := tiny(t, tc.name, tc.edit)
		if err == nil {
			_, err = qwen35.Family.New(c, nil)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
	}
	// a layer type the config package does not know is refused while parsing
	raw, _ := json.Marshal(map[string]any{"model_type": "qwen3_5_text", "hidden_size": 8, "num_hidden_layers": 1,
		"num_attention_heads": 1, "vocab_size": 8, "layer_types": []string{"mamba"}})
	if _, err := config.Parse(raw, nil); err == nil || !strings.Contains(err.Error(), "layer_types") {
		t.Errorf("layer type mamba: error %v, want one naming layer_types", err)
	}
}

// TestResolve: every spelling of the family resolves to it, ahead of the
// generic tier, and layer types fall back to full_attention_interval.
func TestResolve(t *testing.T) {
	for _, tc := range []struct{ top, text string }{
		{"qwen3_5_text", ""}, {"qwen3_5_moe_text", ""}, {"qwen3_5", "qwen3_5_text"}, {"qwen3_5_moe", "qwen3_5_moe_text"},
	} {
		m := map[string]any{"model_type": tc.top, "hidden_size": 8, "num_hidden_layers": 8, "num_attention_heads": 1, "vocab_size": 8}
		if tc.text != "" {
			m = map[string]any{"model_type": tc.top, "text_config": map[string]any{"model_type": tc.text, "hidden_size": 8,
				"num_hidden_layers": 8, "num_attention_heads": 1, "vocab_size": 8, "full_attention_interval": 2}}
		}
		raw, _ := json.Marshal(m)
		c, err := config.Parse(raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		f, err := families.Resolve(c)
		if err != nil || f.Name != "qwen3_5" {
			t.Errorf("%s/%s: %v, %v", tc.top, tc.text, f, err)
		}
		shape := families.Shape(c, 1)
		every := 4
		if tc.text != "" {
			every = 2
		}
		for i, l := range shape.Layers {
			if full := (i+1)%every == 0; full != (l.Kind == fit.Full) {
				t.Errorf("%s: layer %d is %v, want full %v", tc.top, i, l.Kind, full)
			}
		}
	}
}
