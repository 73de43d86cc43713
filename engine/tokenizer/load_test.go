package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// tinyModel is a three-token BPE that tiny() wraps in a tokenizer.json.
const tinyModel = `{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"<s>":3},"merges":["a b"]}`

// tiny returns a tokenizer.json with the given components (JSON, or "null").
func tiny(normalizer, pre, post, dec, model string) []byte {
	return fmt.Appendf(nil, `{"version":"1.0","truncation":null,"padding":null,"added_tokens":[{"id":3,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],`+
		`"normalizer":%s,"pre_tokenizer":%s,"post_processor":%s,"decoder":%s,"model":%s}`, normalizer, pre, post, dec, model)
}

// TestLoadUnsupported checks that components we lack fail the load with a
// message that names them and lists what is supported.
func TestLoadUnsupported(t *testing.T) {
	tests := []struct {
		name, json, want string
	}{
		{"model", string(tiny("null", "null", "null", "null", `{"type":"Unigram","vocab":[]}`)), `model "Unigram" (supported: BPE)`},
		{"normalizer", string(tiny(`{"type":"BertNormalizer"}`, "null", "null", "null", tinyModel)), `normalizer "BertNormalizer" (supported: NFC,`},
		{"nested normalizer", string(tiny(`{"type":"Sequence","normalizers":[{"type":"Precompiled"}]}`, "null", "null", "null", tinyModel)), `Sequence[0]: unsupported tokenizer component normalizer "Precompiled"`},
		{"pre-tokenizer", string(tiny("null", `{"type":"BertPreTokenizer"}`, "null", "null", tinyModel)), `pre-tokenizer "BertPreTokenizer" (supported: ByteLevel,`},
		{"decoder", string(tiny("null", "null", "null", `{"type":"WordPiece","prefix":"##"}`, tinyModel)), `decoder "WordPiece" (supported: ByteLevel,`},
		{"post-processor", string(tiny("null", "null", `{"type":"Whatever"}`, "null", tinyModel)), `post-processor "Whatever" (supported: TemplateProcessing,`},
		{"byte level not last", string(tiny("null", `{"type":"Sequence","pretokenizers":[{"type":"ByteLevel","add_prefix_space":false,"use_regex":false},{"type":"Digits"}]}`, "null", "null", tinyModel)), "ByteLevel must be the last pre-tokenizer"},
		{"dropout", string(tiny("null", "null", "null", "null", `{"type":"BPE","dropout":0.1,"vocab":{"a":0},"merges":[]}`)), "BPE dropout"},
	}
	for _, tt := range tests {
		_, err := FromJSON([]byte(tt.json), nil)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: FromJSON error = %v, want ErrUnsupported containing %q", tt.name, err, tt.want)
		}
	}
}

// TestLoadErrors checks malformed input fails the load with a useful path.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, json, config, want string
	}{
		{"not json", `{"model":`, "", "tokenizer.json: invalid JSON"},
		{"no model", `{"version":"1.0"}`, "", "model: missing"},
		{"merge out of vocab", string(tiny("null", "null", "null", "null", `{"type":"BPE","vocab":{"a":0},"merges":["a c"]}`)), "", `merges: merge 0: token "c" is not in the vocabulary`},
		{"bad merge", string(tiny("null", "null", "null", "null", `{"type":"BPE","vocab":{"a":0},"merges":["a"]}`)), "", `is not two tokens`},
		{"unk missing", string(tiny("null", "null", "null", "null", `{"type":"BPE","unk_token":"<unk>","vocab":{"a":0},"merges":[]}`)), "", `unk_token "<unk>" is not in the vocabulary`},
		{"bad regex", string(tiny("null", `{"type":"Split","pattern":{"Regex":"(a"},"behavior":"Isolated","invert":false}`, "null", "null", tinyModel)), "", `regex "(a"`},
		{"bad behavior", string(tiny("null", `{"type":"Split","pattern":{"String":"a"},"behavior":"Sideways","invert":false}`, "null", "null", tinyModel)), "", `unknown behavior "Sideways"`},
		{"bos not a token", string(tiny("null", "null", "null", "null", tinyModel)), `{"bos_token":"<nope>"}`, `bos_token "<nope>" is not a token`},
		{"bad config", string(tiny("null", "null", "null", "null", tinyModel)), `{"bos_token":7}`, `bos_token: want a string or an object`},
		{"id far out", string(tiny("null", "null", "null", "null", `{"type":"BPE","vocab":{"a":2147483000},"merges":[]}`)), "", `vocab: token id 2147483000 is far beyond the 1 tokens`},
		{"negative added id", `{"added_tokens":[{"id":-1,"content":"x"}],"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, "", `added_tokens: 0: "x" has id -1, out of range`},
		{"post id not a token", string(tiny("null", "null", `{"type":"BertProcessing","cls":["<s>",3],"sep":["</s>",9]}`, "null", tinyModel)), "", `special token id 9 is not a token`},
	}
	for _, tt := range tests {
		var cfg []byte
		if tt.config != "" {
			cfg = []byte(tt.config)
		}
		_, err := FromJSON([]byte(tt.json), cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: FromJSON error = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// TestTiny runs the smallest tokenizer end to end, with BOS from an
// AddedToken object in tokenizer_config.json.
func TestTiny(t *testing.T) {
	post := `{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[3],"tokens":["<s>"]}}}`
	tk, err := FromJSON(tiny("null", "null", post, `{"type":"Fuse"}`, tinyModel), []byte(`{"bos_token":{"__type":"AddedToken","content":"<s>"},"eos_token":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tk.Encode("abba<s>a", true), []int32{3, 2, 1, 0, 3, 0}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if got := tk.Decode([]int32{3, 2, 1, 99, -1, 0}, true); got != "abba" {
		t.Errorf("Decode = %q, want %q", got, "abba")
	}
	if bos, ok := tk.BOS(); !ok || bos != 3 || !tk.AddsBOS() || tk.EOS() != nil {
		t.Errorf("BOS() = %d, %v; AddsBOS() = %v; EOS() = %v; want 3, true; true; []", bos, ok, tk.AddsBOS(), tk.EOS())
	}
	if tk.VocabSize() != 4 || !tk.IsSpecial(3) || tk.IsSpecial(2) {
		t.Errorf("VocabSize() = %d, IsSpecial(3) = %v, IsSpecial(2) = %v", tk.VocabSize(), tk.IsSpecial(3), tk.IsSpecial(2))
	}
}

// TestSpecialTokens pins BOS, EOS and AddsBOS for the real tokenizers, and
// that AddsBOS tells the truth about Encode.
func TestSpecialTokens(t *testing.T) {
	tests := []struct {
		name    string
		bos     string // "" = none
		eos     []string
		addsBOS bool
	}{
		{"llama3", "<|begin_of_text|>", []string{"<|end_of_text|>"}, false},
		{"llama3_1", "<|begin_of_text|>", []string{"<|eot_id|>"}, true},
		{"llama2", "<s>", []string{"</s>"}, true},
		{"qwen3", "", []string{"<|im_end|>"}, false},
		{"gemma3", "<bos>", []string{"<end_of_turn>"}, true},
		{"deepseek_v3", "<｜begin▁of▁sentence｜>", []string{"<｜end▁of▁sentence｜>"}, false},
		{"gptoss", "<|startoftext|>", []string{"<|return|>"}, false},
		{"syn_metaspace", "<s>", []string{"</s>"}, true},
		{"syn_suffix", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := loadReal(t, tt.name)
			bos, ok := tk.BOS()
			tok, _ := tk.Token(bos)
			if !ok {
				tok = ""
			}
			if tok != tt.bos {
				t.Errorf("BOS() = %q, want %q", tok, tt.bos)
			}
			var eos []string
			for _, id := range tk.EOS() {
				tok, _ := tk.Token(id)
				eos = append(eos, tok)
			}
			if !slices.Equal(eos, tt.eos) {
				t.Errorf("EOS() = %q, want %q", eos, tt.eos)
			}
			if tk.AddsBOS() != tt.addsBOS {
				t.Errorf("AddsBOS() = %v, want %v", tk.AddsBOS(), tt.addsBOS)
			}
			ids := tk.Encode("hi", true)
			if starts := ok && len(ids) > 0 && ids[0] == bos; starts != tk.AddsBOS() {
				t.Errorf("Encode(\"hi\", true) = %v, but AddsBOS() = %v", ids, tk.AddsBOS())
			}
		})
	}
}

// TestConcurrent encodes and decodes from several goroutines at once (run
// with -race): a Tokenizer is shared by every request of a server.
func TestConcurrent(t *testing.T) {
	tk := loadReal(t, "syn_gpt2")
	c := readCorpus(t)
	want := make([][]int32, len(c.Strings))
	for i, s := range c.Strings {
		want[i] = tk.Encode(s, true)
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for i := range c.Strings {
				j := (i + g*7) % len(c.Strings)
				if got := tk.Encode(c.Strings[j], true); !slices.Equal(got, want[j]) {
					errs <- fmt.Errorf("Encode(%q) = %v, want %v", c.Strings[j], got, want[j])
					return
				}
				tk.Decode(want[j], g%2 == 0)
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
