package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func load(t *testing.T, name string) *Config {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "configs", name))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(raw, nil)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return c
}

func TestParseRealConfigs(t *testing.T) {
	tests := []struct {
		file                     string
		modelType, textType      string
		headDim, kvHeads, window int
		ropeType                 string
		theta, factor            float64
		tie                      bool
		eos                      []int
		firstLayer, lastLayer    string
		quantized                bool
	}{
		{"llama-3.2-1b.json", "llama", "llama", 64, 8, 0, "llama3", 500000, 32, true, []int{128001, 128008, 128009}, Full, Full, false},
		{"qwen2.5-0.5b-instruct-4bit.json", "qwen2", "qwen2", 64, 2, 0, "default", 1e6, 1, true, []int{151645}, Full, Full, true},
		{"qwen3-0.6b.json", "qwen3", "qwen3", 128, 8, 0, "default", 1e6, 1, true, []int{151645}, Full, Full, false},
		{"mistral-7b-v0.1.json", "mistral", "mistral", 128, 8, 4096, "default", 10000, 1, false, []int{2}, Sliding, Sliding, false},
		{"gemma-3-4b-it.json", "gemma3", "gemma3_text", 256, 4, 1024, "linear", 1e6, 8, false, []int{1, 106}, Sliding, Sliding, false},
		{"transformers5-llama.json", "llama", "llama", 16, 2, 6, "llama3", 10000, 8, false, nil, Full, Sliding, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c := load(t, tt.file)
			got := []any{c.ModelType, c.TextModelType, c.HeadDim, c.NumKeyValueHeads, c.SlidingWindow, c.Rope.Type, c.Rope.Theta, c.Rope.Factor, c.TieWordEmbeddings, c.LayerTypes[0], c.LayerTypes[len(c.LayerTypes)-1], c.Quantization != nil}
			want := []any{tt.modelType, tt.textType, tt.headDim, tt.kvHeads, tt.window, tt.ropeType, tt.theta, tt.factor, tt.tie, tt.firstLayer, tt.lastLayer, tt.quantized}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse = %v, want %v", got, want)
			}
			if !reflect.DeepEqual(c.EOSTokenIDs, tt.eos) {
				t.Errorf("EOSTokenIDs = %v, want %v", c.EOSTokenIDs, tt.eos)
			}
			if len(c.LayerTypes) != c.NumHiddenLayers {
				t.Errorf("%d layer types for %d layers", len(c.LayerTypes), c.NumHiddenLayers)
			}
		})
	}
}

func TestGenerationConfigMergesEOS(t *testing.T) {
	c, err := Parse([]byte(`{"model_type":"llama","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"vocab_size":10,"eos_token_id":2}`),
		[]byte(`{"eos_token_id":[2,7],"bos_token_id":1,"temperature":0.6,"top_p":0.9}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.EOSTokenIDs, []int{2, 7}) || c.BOSTokenID == nil || *c.BOSTokenID != 1 {
		t.Errorf("EOS %v BOS %v, want [2 7] and 1", c.EOSTokenIDs, c.BOSTokenID)
	}
	if c.Generation.Temperature != 0.6 || c.Generation.TopP != 0.9 {
		t.Errorf("Generation = %+v", c.Generation)
	}
	if c.HeadDim != 4 {
		t.Errorf("HeadDim = %d, want hidden/heads = 4", c.HeadDim)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	base := `"model_type":"llama","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"vocab_size":10`
	tests := []struct{ name, json, want string }{
		{"not json", `{`, "not a JSON object"},
		{"no model_type", `{"hidden_size":8}`, `missing "model_type"`},
		{"string hidden", `{"model_type":"llama","hidden_size":"big"}`, `"hidden_size" is "big", want an integer`},
		{"zero layers", `{"model_type":"llama","hidden_size":8,"num_hidden_layers":0,"num_attention_heads":2,"vocab_size":10}`, `"num_hidden_layers" must be a positive integer`},
		{"kv heads", `{` + base + `,"num_key_value_heads":3}`, `"num_key_value_heads" 3 must divide`},
		{"head dim", `{"model_type":"llama","hidden_size":9,"num_hidden_layers":1,"num_attention_heads":2,"vocab_size":10}`, `no "head_dim"`},
		{"layer types length", `{` + base + `,"layer_types":["full_attention","full_attention"]}`, `"layer_types" has 2 entries for 1 layers`},
		{"layer type name", `{` + base + `,"layer_types":["chunked"]}`, `"layer_types"[0] is "chunked"`},
		{"sliding without window", `{` + base + `,"layer_types":["sliding_attention"]}`, `"sliding_window" is not set`},
		{"rope not object", `{` + base + `,"rope_scaling":3}`, `"rope_scaling" is not an object`},
		{"bad theta", `{` + base + `,"rope_theta":0}`, `"rope_theta" must be positive`},
		{"eos text", `{` + base + `,"eos_token_id":"x"}`, `"eos_token_id" is "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.json), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%s) error = %v, want it to contain %q", tt.json, err, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	entries, _ := os.ReadDir(filepath.Join("testdata", "configs"))
	for _, e := range entries {
		raw, _ := os.ReadFile(filepath.Join("testdata", "configs", e.Name()))
		f.Add(raw, []byte(`{"eos_token_id":[1,2]}`))
	}
	f.Fuzz(func(t *testing.T, cfg, gen []byte) {
		c, err := Parse(cfg, gen)
		if err == nil && (c.HeadDim <= 0 || len(c.LayerTypes) != c.NumHiddenLayers) {
			t.Fatalf("accepted an inconsistent config: head_dim %d, %d layer types for %d layers", c.HeadDim, len(c.LayerTypes), c.NumHiddenLayers)
		}
	})
}

// TestGemma3Ropes reads Gemma 3's two ropes in both spellings: the
// transformers 5 nested rope_parameters and the older rope_local_base_freq.
func TestGemma3Ropes(t *testing.T) {
	for _, file := range []string{"transformers5-gemma3-text.json", "gemma-3-4b-it.json"} {
		c := load(t, file)
		if c.Rope.Type != "linear" || c.Rope.Factor != 8 || c.Rope.Theta != 1e6 {
			t.Errorf("%s: full rope = %+v, want linear ×8 at 1e6", file, c.Rope)
		}
		if c.SlidingRope == nil || c.SlidingRope.Type != "default" || c.SlidingRope.Theta != 10000 {
			t.Errorf("%s: sliding rope = %+v, want default at 10000", file, c.SlidingRope)
		}
		if file == "gemma-3-4b-it.json" && (c.LayerTypes[4] != Sliding || c.LayerTypes[5] != Full || c.LayerTypes[11] != Full) {
			t.Errorf("%s: layer types %v, want every sixth layer full", file, c.LayerTypes)
		}
		if c.HiddenAct != "gelu_pytorch_tanh" {
			t.Errorf("%s: HiddenAct = %q, want hidden_activation's gelu_pytorch_tanh", file, c.HiddenAct)
		}
	}
}

func TestFields(t *testing.T) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{"a":1.5,"n":3,"b":true,"l":[1,2],"one":4,"nil":null,"bad":"x"}`), &m); err != nil {
		t.Fatal(err)
	}
	f := NewFields(m)
	if f.Float("a", 0) != 1.5 || f.Int("n", 0) != 3 || !f.Bool("b", false) || f.Float("nil", 7) != 7 || f.Int("missing", 9) != 9 {
		t.Error("values or defaults wrong")
	}
	if got := f.Ints("l"); len(got) != 2 || got[1] != 2 {
		t.Errorf("Ints(l) = %v", got)
	}
	if got := f.Ints("one"); len(got) != 1 || got[0] != 4 {
		t.Errorf("Ints(one) = %v", got)
	}
	if f.Err() != nil {
		t.Fatalf("Err = %v before a malformed read", f.Err())
	}
	f.Int("a", 0) // 1.5 is not an integer
	f.Float("bad", 0)
	if err := f.Err(); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("Err = %v, want the first malformed key, \"a\"", err)
	}
}
