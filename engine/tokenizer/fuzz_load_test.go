package tokenizer

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzProbes are the texts a fuzzed tokenizer encodes: short, so that a
// pathological pattern cannot stall the fuzzer, and of every kind.
var fuzzProbes = []string{"", "ab", "abab ab  a\tb\n", "<s>ab</s>", "Hello, World! 123", "日本語 😀 é", " \u3000 ", "\xff\xfeab", "<0x41>"}

// componentSeeds are tokenizer.json files built from the components of the
// real and synthetic tokenizers (normalizer, pre-tokenizer, post-processor,
// decoder, the model's options and a few added tokens) around a small
// vocabulary. Whole files would be too big to mutate and minimize quickly.
func componentSeeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, name := range allTokenizers {
		tj, err := os.ReadFile(filepath.Join(tokenizerDir(name), "tokenizer.json"))
		if err != nil {
			continue
		}
		top, err := rawObject(tj)
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		get := func(key string) string {
			if v, ok := top[key]; ok && len(v) > 0 {
				return string(v)
			}
			return "null"
		}
		var added []json.RawMessage
		if err := json.Unmarshal(top["added_tokens"], &added); err != nil {
			f.Fatalf("%s: added_tokens: %v", name, err)
		}
		model := map[string]json.RawMessage{}
		m, err := rawObject(top["model"])
		if err != nil {
			f.Fatalf("%s: model: %v", name, err)
		}
		for k, v := range m {
			if k != "vocab" && k != "merges" {
				model[k] = v
			}
		}
		model["vocab"] = json.RawMessage(`{"a":0,"b":1,"ab":2,"<s>":3,"</s>":4,"<unk>":5,"▁":6,"▁a":7,"Ġ":8,"Ġa":9,"<0x41>":10,"<0xE6>":11}`)
		model["merges"] = json.RawMessage(`["a b","▁ a","Ġ a"]`)
		mb, err := json.Marshal(model)
		if err != nil {
			f.Fatal(err)
		}
		ab, err := json.Marshal(added[:min(len(added), 4)])
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, fmt.Appendf(nil, `{"version":"1.0","added_tokens":%s,"normalizer":%s,"pre_tokenizer":%s,"post_processor":%s,"decoder":%s,"model":%s}`,
			ab, get("normalizer"), get("pre_tokenizer"), get("post_processor"), get("decoder"), mb))
	}
	return out
}

// FuzzTokenizerJSON checks that loading any tokenizer.json returns an error
// or a tokenizer, never panics, and that a tokenizer it returns encodes and
// decodes, with MinTokens and EncodeLimit true to Encode.
func FuzzTokenizerJSON(f *testing.F) {
	for _, seed := range componentSeeds(f) {
		f.Add(seed)
	}
	f.Add(tiny("null", "null", "null", "null", tinyModel))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":2147483000},"merges":[]}}`))
	f.Add([]byte(`{"added_tokens":[{"id":-1,"content":"x"}],"model":{"vocab":{"a":0},"merges":[["a","a"]]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := FromJSON(data, nil)
		if err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for _, s := range fuzzProbes {
			checkLimits(t, tk, s, rng)
			tk.Decode(tk.Encode(s, true), false)
		}
	})
}

// FuzzTokenizerConfig checks that tokenizer_config.json and
// special_tokens_map.json, whatever they hold, load or fail with an error,
// and that BOS and EOS, when they load, name tokens.
func FuzzTokenizerConfig(f *testing.F) {
	// The base tokenizer knows the real files' BOS and EOS tokens.
	contents := []string{"<s>", "</s>", "<unk>"}
	for _, name := range allTokenizers {
		cfg, err := os.ReadFile(filepath.Join(tokenizerDir(name), "tokenizer_config.json"))
		if err != nil {
			continue
		}
		var c tokenConfig
		if err := json.Unmarshal(cfg, &c); err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		for _, raw := range []json.RawMessage{c.BOS, c.EOS} {
			if s, err := tokenContent(raw); err == nil && s != "" {
				contents = append(contents, s)
			}
		}
		// Keep the shape of added_tokens_decoder, not its hundreds of
		// entries: a small seed mutates and minimizes quickly.
		var all map[string]json.RawMessage
		if err := json.Unmarshal(cfg, &all); err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		var decoder map[string]json.RawMessage
		if err := json.Unmarshal(all["added_tokens_decoder"], &decoder); err == nil {
			keep := map[string]json.RawMessage{}
			for k, v := range decoder {
				if len(keep) < 2 {
					keep[k] = v
				}
			}
			all["added_tokens_decoder"], _ = json.Marshal(keep)
		}
		if cfg, err = json.Marshal(all); err != nil {
			f.Fatal(err)
		}
		f.Add(cfg, []byte(nil))
	}
	var added []string
	for i, c := range contents {
		b, _ := json.Marshal(c)
		added = append(added, fmt.Sprintf(`{"id":%d,"content":%s,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}`, 100+i, b))
	}
	base := []byte(strings.Replace(string(tiny("null", "null", "null", "null", tinyModel)), `"added_tokens":[`, `"added_tokens":[`+strings.Join(added, ",")+",", 1))
	if _, err := FromJSON(base, nil); err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"bos_token":{"__type":"AddedToken","content":"<s>"},"eos_token":null}`), []byte(`{"eos_token":"</s>"}`))
	f.Add([]byte(`{"bos_token":7}`), []byte(nil))
	f.Add([]byte(nil), []byte(`{"bos_token":{"content":"<unk>","lstrip":false},"eos_token":"<s>"}`))
	f.Fuzz(func(t *testing.T, cfg, special []byte) {
		if len(cfg) == 0 {
			cfg = nil
		}
		if len(special) == 0 {
			special = nil
		}
		tk, err := fromJSON(base, cfg, special)
		if err != nil {
			return
		}
		if bos, ok := tk.BOS(); ok {
			if _, ok := tk.Token(bos); !ok {
				t.Fatalf("BOS %d is not a token", bos)
			}
		}
		for _, id := range tk.EOS() {
			if _, ok := tk.Token(id); !ok {
				t.Fatalf("EOS %d is not a token", id)
			}
		}
	})
}
