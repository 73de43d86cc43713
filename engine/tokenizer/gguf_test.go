package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"hearth/engine/gguf"
)

// GGUF vocabularies made from the reference tokenizers, the way llama.cpp's
// convert_hf_to_gguf.py makes them, must tokenize exactly as the
// tokenizer.json they came from.

// ggufPreOf is the tokenizer.ggml.pre that convert_hf_to_gguf.py's
// get_vocab_base_pre finds for each byte-level reference tokenizer (it
// hashes the ids of a check text and looks the hash up in its table; these
// are the table's entries for the models the packages hold).
var ggufPreOf = map[string]string{
	"llama3":      "llama-bpe",
	"llama3_1":    "llama-bpe",
	"qwen3":       "qwen2",
	"deepseek_v3": "deepseek-v3",
	"gptoss":      "gpt-4o",
}

// spmTokenizers are the reference tokenizers converted from SentencePiece
// models; their GGUF vocabularies are "llama" ones, with scores.
var spmTokenizers = map[string]bool{"llama2": true, "gemma3": true}

// hfFiles is what the converter reads of a checkpoint's tokenizer files.
type hfFiles struct {
	vocab  map[string]int32
	merges []string // "a b", as SpecialVocab writes them
	added  []addedToken
	unk    *string
	post   json.RawMessage
	config map[string]json.RawMessage
}

func readHF(t testing.TB, name string) *hfFiles {
	t.Helper()
	dir := tokenizerDir(name)
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AddedTokens   []addedToken    `json:"added_tokens"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Model         struct {
			Vocab    map[string]int32 `json:"vocab"`
			Merges   json.RawMessage  `json:"merges"`
			UnkToken *string          `json:"unk_token"`
		} `json:"model"`
	}
	if err := json.Unmarshal(tj, &doc); err != nil {
		t.Fatal(err)
	}
	h := &hfFiles{vocab: doc.Model.Vocab, added: doc.AddedTokens, unk: doc.Model.UnkToken, post: doc.PostProcessor}
	if err := json.Unmarshal(doc.Model.Merges, &h.merges); err != nil {
		// Pairs: gguf-py's SpecialVocab joins them with a space.
		h.merges = nil
		var pairs [][2]string
		if err := json.Unmarshal(doc.Model.Merges, &pairs); err != nil {
			t.Fatalf("merges: %v", err)
		}
		for _, p := range pairs {
			h.merges = append(h.merges, p[0]+" "+p[1])
		}
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(cfg, &h.config); err != nil {
		t.Fatal(err)
	}
	return h
}

// doesTokenLookSpecial is convert_hf_to_gguf.py's does_token_look_special.
func doesTokenLookSpecial(tok string) bool {
	switch tok {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(tok, "<|") && strings.HasSuffix(tok, "|>") ||
		strings.HasPrefix(tok, "<｜") && strings.HasSuffix(tok, "｜>") ||
		strings.HasPrefix(tok, "<unused") && strings.HasSuffix(tok, ">")
}

var bytePiece = regexp.MustCompile(`^<0x[0-9A-Fa-f]{2}>$`)

func strArray(xs []string) gguf.Value {
	return gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeString, V: xs}
}

// vocabBase is convert_hf_to_gguf.py's get_vocab_base: every id below the
// vocabulary size, added tokens "un-normalized" through an encode and
// decode when not normalized, CONTROL when special or special-looking,
// else USER_DEFINED with "▁" written as a space; missing ids are [PADi].
func vocabBase(h *hfFiles, ref *Tokenizer) ([]string, []int64) {
	reverse := map[int32]string{}
	for tok, id := range h.vocab {
		reverse[id] = tok
	}
	added := map[int32]addedToken{}
	for _, a := range h.added {
		reverse[a.ID] = a.Content
		added[a.ID] = a
	}
	var tokens []string
	var types []int64
	for i := range int32(ref.VocabSize()) { // the config's vocab_size: every id
		tok, ok := reverse[i]
		if !ok {
			tokens, types = append(tokens, fmt.Sprintf("[PAD%d]", i)), append(types, ggufTypeUnused)
			continue
		}
		if a, isAdded := added[i]; isAdded {
			if !a.Normalized {
				tok = ref.Decode(ref.Encode(tok, false), false)
			}
			if a.Special || doesTokenLookSpecial(tok) {
				types = append(types, ggufTypeControl)
			} else {
				tok = strings.ReplaceAll(tok, "▁", " ")
				types = append(types, ggufTypeUserDefined)
			}
		} else {
			types = append(types, ggufTypeNormal)
		}
		tokens = append(tokens, tok)
	}
	return tokens, types
}

// vocabSentencePiece is convert_hf_to_gguf.py's _create_vocab_sentencepiece.
// The packages ship no tokenizer.model, so the pieces come from
// tokenizer.json's vocabulary, which transformers' converter copied from
// it, and each piece's score from the rank of the first merge that builds
// it: transformers made the merges from the scores (generate_merges, best
// first), so the ranks keep the scores' order. Pieces no merge builds keep
// score 0; their score never ranks a merge.
func vocabSentencePiece(h *hfFiles, vocabSize int) ([]string, []float64, []int64) {
	tokens := make([]string, vocabSize)
	scores := make([]float64, vocabSize)
	types := make([]int64, vocabSize)
	for i := range tokens {
		tokens[i], scores[i], types[i] = fmt.Sprintf("[PAD%d]", i), -10000, ggufTypeUnused
	}
	rank := map[string]int{}
	for r, m := range h.merges {
		a, b, _ := strings.Cut(m, " ")
		if _, ok := rank[a+b]; !ok {
			rank[a+b] = r
		}
	}
	for piece, id := range h.vocab {
		tokens[id], scores[id], types[id] = piece, 0, ggufTypeNormal
		if r, ok := rank[piece]; ok {
			scores[id] = -float64(r)
		}
		switch {
		case h.unk != nil && piece == *h.unk:
			types[id] = ggufTypeUnknown
		case bytePiece.MatchString(piece):
			types[id] = ggufTypeByte
		}
	}
	// tokenizer_config.json's added_tokens_decoder overrides.
	var dec map[string]struct {
		Content string `json:"content"`
		Special bool   `json:"special"`
	}
	if err := json.Unmarshal(h.config["added_tokens_decoder"], &dec); err == nil {
		for k, d := range dec {
			id, _ := strconv.Atoi(k)
			if id >= vocabSize {
				continue
			}
			tok := d.Content
			if d.Special || doesTokenLookSpecial(tok) {
				types[id] = ggufTypeControl
			} else {
				tok = strings.ReplaceAll(tok, "▁", " ")
				types[id] = ggufTypeUserDefined
			}
			scores[id], tokens[id] = -1000, tok
		}
	}
	return tokens, scores, types
}

// specialVocab is the part of gguf-py's SpecialVocab that writes the
// special token ids, add_bos_token/add_eos_token (from a TemplateProcessing
// post-processor, then tokenizer_config.json) and the chat template.
func specialVocab(h *hfFiles, nVocab int) []gguf.KV {
	var kv []gguf.KV
	content := func(key string) string {
		s, _ := tokenContent(h.config[key])
		return s
	}
	type flag struct{ set, on bool }
	var addBOS, addEOS flag
	procs := []json.RawMessage{h.post}
	var seq struct {
		Processors []json.RawMessage `json:"processors"`
	}
	if json.Unmarshal(h.post, &seq) == nil && seq.Processors != nil {
		procs = seq.Processors
	}
	for _, p := range procs {
		var tp struct {
			Type   string                    `json:"type"`
			Single []map[string]templateItem `json:"single"`
		}
		if json.Unmarshal(p, &tp) != nil || tp.Type != "TemplateProcessing" || len(tp.Single) <= 1 {
			continue
		}
		if first, ok := tp.Single[0]["SpecialToken"]; ok {
			addBOS = flag{true, first.ID == content("bos_token") || first.ID == content("cls_token")}
		}
		if last, ok := tp.Single[len(tp.Single)-1]["SpecialToken"]; ok {
			addEOS = flag{true, last.ID == content("eos_token")}
		}
	}
	for _, x := range []struct {
		flag *flag
		key  string
	}{{&addBOS, "add_bos_token"}, {&addEOS, "add_eos_token"}} {
		var b bool
		if len(h.config[x.key]) > 0 && json.Unmarshal(h.config[x.key], &b) == nil {
			*x.flag = flag{true, b}
		}
		if x.flag.set {
			kv = append(kv, gguf.KV{Key: "tokenizer.ggml." + x.key, Value: gguf.Value{Type: gguf.TypeBool, V: x.flag.on}})
		}
	}
	for _, typ := range []struct{ name, key string }{
		{"bos", "bos_token_id"}, {"eos", "eos_token_id"}, {"unk", "unknown_token_id"}, {"sep", "seperator_token_id"},
		{"pad", "padding_token_id"}, {"cls", "cls_token_id"}, {"mask", "mask_token_id"},
	} {
		c := content(typ.name + "_token")
		if c == "" {
			continue
		}
		for _, a := range h.added {
			if a.Content == c {
				if int(a.ID) < nVocab {
					kv = append(kv, gguf.KV{Key: "tokenizer.ggml." + typ.key, Value: gguf.Value{Type: gguf.TypeUint32, V: uint64(a.ID)}})
				}
				break
			}
		}
	}
	var tmpl string
	if json.Unmarshal(h.config["chat_template"], &tmpl) == nil && tmpl != "" {
		kv = append(kv, gguf.KV{Key: "tokenizer.chat_template", Value: gguf.Value{Type: gguf.TypeString, V: tmpl}})
	}
	return kv
}

// hfToGGUF is the tokenizer metadata convert_hf_to_gguf.py writes for the
// reference tokenizer name: _set_vocab_gpt2 for byte-level BPE,
// _set_vocab_sentencepiece for SentencePiece (Gemma3Model adds
// add_space_prefix false). It returns the metadata and the token types.
func hfToGGUF(t testing.TB, name string, ref *Tokenizer) ([]gguf.KV, []int64) {
	h := readHF(t, name)
	var kv []gguf.KV
	var tokens []string
	var types []int64
	if spmTokenizers[name] {
		var scores []float64
		tokens, scores, types = vocabSentencePiece(h, ref.VocabSize())
		kv = append(kv,
			gguf.KV{Key: "tokenizer.ggml.model", Value: gguf.Value{Type: gguf.TypeString, V: "llama"}},
			gguf.KV{Key: "tokenizer.ggml.pre", Value: gguf.Value{Type: gguf.TypeString, V: "default"}},
			gguf.KV{Key: "tokenizer.ggml.tokens", Value: strArray(tokens)},
			gguf.KV{Key: "tokenizer.ggml.scores", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeFloat32, V: scores}},
		)
	} else {
		pre, ok := ggufPreOf[name]
		if !ok {
			t.Fatalf("no tokenizer.ggml.pre for %s", name)
		}
		tokens, types = vocabBase(h, ref)
		kv = append(kv,
			gguf.KV{Key: "tokenizer.ggml.model", Value: gguf.Value{Type: gguf.TypeString, V: "gpt2"}},
			gguf.KV{Key: "tokenizer.ggml.pre", Value: gguf.Value{Type: gguf.TypeString, V: pre}},
			gguf.KV{Key: "tokenizer.ggml.tokens", Value: strArray(tokens)},
		)
	}
	kv = append(kv, gguf.KV{Key: "tokenizer.ggml.token_type", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeInt32, V: types}})
	if !spmTokenizers[name] {
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.merges", Value: strArray(h.merges)})
	}
	kv = append(kv, specialVocab(h, len(tokens))...)
	if name == "gemma3" {
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.add_space_prefix", Value: gguf.Value{Type: gguf.TypeBool, V: false}})
	}
	return kv, types
}

// writeGGUF writes kv to a GGUF file in a temporary directory and reads it
// back.
func writeGGUF(t testing.TB, kv []gguf.KV) *gguf.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(fh, kv, nil); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return m.Meta()
}

// TestFromGGUFReference converts each reference tokenizer to GGUF, loads it
// back with FromGGUF, and checks it against the reference's goldens and
// against the tokenizer.json tokenizer on the golden strings, the added
// token sweep and the mixed text.
//
// Two differences are GGUF's, and checked as such: a token GGUF calls
// CONTROL is special (the converter makes special-looking added tokens
// control ones, such as DeepSeek V3's "<｜tool▁sep｜>" and Gemma 3's
// "<unused0>", which tokenizer.json leaves not special), so Decode with
// skipSpecial drops it; and Encode with addSpecial adds BOS as
// add_bos_token, or llama.cpp's default for the vocabulary, says.
func TestFromGGUFReference(t *testing.T) {
	c := readCorpus(t)
	for _, name := range realTokenizers {
		t.Run(name, func(t *testing.T) {
			ref := loadReal(t, name)
			kv, types := hfToGGUF(t, name, ref)
			tk, err := FromGGUF(writeGGUF(t, kv))
			if err != nil {
				t.Fatal(err)
			}
			if tk.VocabSize() != ref.VocabSize() {
				t.Fatalf("VocabSize() = %d, want %d", tk.VocabSize(), ref.VocabSize())
			}
			for id := range int32(ref.VocabSize()) {
				want, wok := ref.Token(id)
				got, gok := tk.Token(id)
				if got != want || gok != wok {
					t.Errorf("Token(%d) = %q, %v; want %q, %v", id, got, gok, want, wok)
				}
				if ws := types[id] == ggufTypeControl || types[id] == ggufTypeUnknown; tk.IsSpecial(id) != ws {
					t.Errorf("IsSpecial(%d %q) = %v, want %v (token type %d)", id, got, tk.IsSpecial(id), ws, types[id])
				}
				// Only the converter's special-looking tokens may differ.
				if tk.IsSpecial(id) != ref.IsSpecial(id) && (ref.IsSpecial(id) || !doesTokenLookSpecial(want)) {
					t.Errorf("IsSpecial(%d %q) = %v, tokenizer.json says %v", id, want, tk.IsSpecial(id), ref.IsSpecial(id))
				}
				if wok {
					gid, gok := tk.TokenID(want)
					rid, rok := ref.TokenID(want)
					if gid != rid || gok != rok {
						t.Errorf("TokenID(%q) = %d, %v; want %d, %v", want, gid, gok, rid, rok)
					}
				}
			}
			wb, wbok := ref.BOS()
			if b, ok := tk.BOS(); b != wb || ok != wbok {
				t.Errorf("BOS() = %d, %v; want %d, %v", b, ok, wb, wbok)
			}
			if got, want := tk.EOS(), ref.EOS(); !slices.Equal(got, want) {
				t.Errorf("EOS() = %v, want %v", got, want)
			}
			// Where the GGUF adds a BOS that tokenizer.json does not:
			// DeepSeek V3's tokenizer_config.json says add_bos_token, and
			// llama.cpp adds BOS for "llama-bpe" when the file does not say
			// (this Llama 3 tokenizer.json predates Meta's BOS template).
			addsBOS := ref.AddsBOS() || name == "deepseek_v3" || name == "llama3"
			if tk.AddsBOS() != addsBOS {
				t.Errorf("AddsBOS() = %v, want %v", tk.AddsBOS(), addsBOS)
			}
			withBOS := func(ids []int32) []int32 {
				if addsBOS {
					return append([]int32{wb}, ids...)
				}
				return ids
			}
			// decodeSkip is what Decode(ids, true) must give: the reference's
			// decoding without the ids special here.
			decodeSkip := func(ids []int32) string {
				var keep []int32
				for _, id := range ids {
					if !tk.IsSpecial(id) {
						keep = append(keep, id)
					}
				}
				return ref.Decode(keep, false)
			}
			g := readGolden(t, name)
			for _, tc := range g.Cases {
				text := c.Strings[tc.I]
				ids := tk.Encode(text, false)
				if n := tk.MinTokens(len(text)); n > len(ids) {
					t.Errorf("MinTokens(%d) = %d, above the %d ids of %q", len(text), n, len(ids), text)
				}
				if !slices.Equal(ids, tc.IDs) {
					t.Errorf("Encode(%q, false)\n got %v\nwant %v", text, ids, tc.IDs)
				}
				if got, want := tk.Encode(text, true), withBOS(tc.IDs); !slices.Equal(got, want) {
					t.Errorf("Encode(%q, true)\n got %v\nwant %v", text, got, want)
				}
				if got := tk.Decode(tc.IDsSpecial, false); got != tc.Decode {
					t.Errorf("Decode(%v, false) = %q, want %q", tc.IDsSpecial, got, tc.Decode)
				}
				want := tc.DecodeSkip
				if slices.ContainsFunc(tc.IDsSpecial, func(id int32) bool { return tk.IsSpecial(id) != ref.IsSpecial(id) }) {
					want = decodeSkip(tc.IDsSpecial)
				}
				if got := tk.Decode(tc.IDsSpecial, true); got != want {
					t.Errorf("Decode(%v, true) = %q, want %q", tc.IDsSpecial, got, want)
				}
			}
			// Every added token, inside a word and between spaces.
			tj, err := os.ReadFile(filepath.Join(tokenizerDir(name), "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			added := addedContents(t, tj)
			for _, sw := range g.Sweep {
				text := sweepText(added[sw.First : sw.First+sw.Count])
				ids := tk.Encode(text, false)
				if len(ids) != sw.NIDs || idsSHA(ids) != sw.IDsSHA256 {
					t.Errorf("added tokens %d..: Encode differs from the reference", sw.First)
				}
				checkAgainst(t, tk, ref, text, decodeSkip)
			}
			text := c.mixedText(g.Mixed.Seed, g.Mixed.Bytes)
			if ids := tk.Encode(text, false); len(ids) != g.Mixed.NIDs || idsSHA(ids) != g.Mixed.IDsSHA256 {
				t.Errorf("mixed text: Encode differs from the reference")
			}
			checkAgainst(t, tk, ref, text, decodeSkip)
		})
	}
}

// checkAgainst compares tk's ids and decodings of text with ref's.
func checkAgainst(t *testing.T, tk, ref *Tokenizer, text string, decodeSkip func([]int32) string) {
	t.Helper()
	ids := ref.Encode(text, false)
	if n := tk.MinTokens(len(text)); n > len(ids) {
		t.Errorf("MinTokens(%d) = %d, above the %d ids", len(text), n, len(ids))
	}
	if got := tk.Encode(text, false); !slices.Equal(got, ids) {
		t.Errorf("Encode differs from tokenizer.json's (%d ids, want %d)", len(got), len(ids))
	}
	if got, want := tk.Decode(ids, false), ref.Decode(ids, false); got != want {
		t.Errorf("Decode differs from tokenizer.json's")
	}
	if got, want := tk.Decode(ids, true), decodeSkip(ids); got != want {
		t.Errorf("Decode(skipSpecial) differs from tokenizer.json's without the control tokens")
	}
}

// tinyGPT2 is a small byte-level GGUF vocabulary: the bytes of "abc" and
// space, two merges, a control BOS/EOS and a user-defined token.
func tinyGPT2() []gguf.KV {
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.Value{Type: gguf.TypeString, V: "gpt2"}},
		{Key: "tokenizer.ggml.pre", Value: gguf.Value{Type: gguf.TypeString, V: "gpt-2"}},
		{Key: "tokenizer.ggml.tokens", Value: strArray([]string{"a", "b", "c", "Ġ", "ab", "Ġab", "<|bos|>", "<|eos|>", "<tool>"})},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeInt32, V: []int64{1, 1, 1, 1, 1, 1, 3, 3, 4}}},
		{Key: "tokenizer.ggml.merges", Value: strArray([]string{"a b", "Ġ ab"})},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Value{Type: gguf.TypeUint32, V: uint64(6)}},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Value{Type: gguf.TypeUint32, V: uint64(7)}},
		{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Value{Type: gguf.TypeBool, V: true}},
	}
}

// tinySPM is a small SentencePiece GGUF vocabulary. "▁b" and "bc" have
// equal scores, so "▁bc" splits at its leftmost pair: ▁b, c. The converter
// wrote the user-defined piece "▁▁" as two spaces.
func tinySPM() []gguf.KV {
	tokens := []string{"<unk>", "<s>", "</s>", "<0x21>", "▁", "a", "b", "c", "▁a", "ab", "▁b", "bc", "▁ab", "  "}
	scores := []float64{0, 0, 0, 0, 0, 0, 0, 0, -1, -2, -3, -3, -4, -1000}
	types := []int64{2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4}
	return []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.Value{Type: gguf.TypeString, V: "llama"}},
		{Key: "tokenizer.ggml.pre", Value: gguf.Value{Type: gguf.TypeString, V: "default"}},
		{Key: "tokenizer.ggml.tokens", Value: strArray(tokens)},
		{Key: "tokenizer.ggml.scores", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeFloat32, V: scores}},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeInt32, V: types}},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Value{Type: gguf.TypeUint32, V: uint64(1)}},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Value{Type: gguf.TypeUint32, V: uint64(2)}},
		{Key: "tokenizer.ggml.unknown_token_id", Value: gguf.Value{Type: gguf.TypeUint32, V: uint64(0)}},
	}
}

// TestFromGGUFTiny checks both vocabulary kinds on hand-worked examples.
func TestFromGGUFTiny(t *testing.T) {
	gpt2, err := FromGGUF(writeGGUF(t, tinyGPT2()))
	if err != nil {
		t.Fatal(err)
	}
	spm, err := FromGGUF(writeGGUF(t, tinySPM()))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tk      *Tokenizer
		text    string
		special bool
		want    []int32
		decode  string // Decode(want, true)
	}{
		{gpt2, "ab ab", false, []int32{4, 5}, "ab ab"},
		{gpt2, "ab ab", true, []int32{6, 4, 5}, "ab ab"},
		{gpt2, "c<|eos|>ab<tool>", false, []int32{2, 7, 4, 8}, "cab<tool>"},
		{gpt2, "abd", false, []int32{4}, "ab"}, // no token for "d": dropped, as in tokenizer.json
		// SentencePiece: "▁" prepended to each piece between added
		// tokens; equal scores merge leftmost first.
		{spm, "ab", true, []int32{1, 12}, "ab"},
		{spm, "bc", false, []int32{10, 7}, "bc"},
		{spm, "ab b</s>a", false, []int32{12, 10, 2, 8}, "ab b a"},
		{spm, "a!", false, []int32{8, 3}, "a!"}, // byte fallback
		{spm, "a?", false, []int32{8, 0}, "a"},  // no <0x3F>: unknown
		// The user-defined "▁▁", written "  ", is a piece again: spaces
		// reach it through the merges, not by matching the raw text.
		{spm, "  ", false, []int32{13, 4}, "  "},
	} {
		if got := tc.tk.Encode(tc.text, tc.special); !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q, %v) = %v, want %v", tc.text, tc.special, got, tc.want)
		}
		if got := tc.tk.Decode(tc.want, true); got != tc.decode {
			t.Errorf("Decode(%v, true) = %q, want %q", tc.want, got, tc.decode)
		}
	}
	if !gpt2.IsSpecial(7) || gpt2.IsSpecial(8) || !spm.IsSpecial(0) || spm.IsSpecial(13) {
		t.Errorf("control and unknown tokens must be special, user-defined ones not")
	}
	if tok, _ := spm.Token(13); tok != "▁▁" {
		t.Errorf("Token(13) = %q, want the piece \"▁▁\"", tok)
	}
	if !gpt2.AddsBOS() || !spm.AddsBOS() {
		t.Errorf("AddsBOS() false")
	}
	if got := spm.EOS(); !slices.Equal(got, []int32{2}) {
		t.Errorf("EOS() = %v", got)
	}
}

// TestFromGGUFErrors checks that malformed tokenizer metadata is refused
// with an error naming what is wrong.
func TestFromGGUFErrors(t *testing.T) {
	set := func(kv []gguf.KV, key string, v gguf.Value) []gguf.KV {
		kv = slices.Clone(kv)
		for i := range kv {
			if kv[i].Key == key {
				kv[i].Value = v
				return kv
			}
		}
		return append(kv, gguf.KV{Key: key, Value: v})
	}
	drop := func(kv []gguf.KV, key string) []gguf.KV {
		return slices.DeleteFunc(slices.Clone(kv), func(x gguf.KV) bool { return x.Key == key })
	}
	str := func(s string) gguf.Value { return gguf.Value{Type: gguf.TypeString, V: s} }
	u32 := func(x uint64) gguf.Value { return gguf.Value{Type: gguf.TypeUint32, V: x} }
	ints := func(xs ...int64) gguf.Value { return gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeInt32, V: xs} }
	floats := func(xs ...float64) gguf.Value {
		return gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeFloat32, V: xs}
	}
	nanScores := make([]float64, 14)
	nanScores[5] = math.NaN()
	for _, tc := range []struct {
		name        string
		kv          []gguf.KV
		want        string
		unsupported bool
	}{
		{"no model", drop(tinyGPT2(), "tokenizer.ggml.model"), "tokenizer.ggml.model: missing", false},
		{"model not a string", set(tinyGPT2(), "tokenizer.ggml.model", u32(1)), "tokenizer.ggml.model: uint32, want a string", false},
		{"unknown model", set(tinyGPT2(), "tokenizer.ggml.model", str("bert")), `tokenizer.ggml.model "bert"`, true},
		{"no tokens", drop(tinyGPT2(), "tokenizer.ggml.tokens"), "tokenizer.ggml.tokens: missing", false},
		{"tokens not strings", set(tinyGPT2(), "tokenizer.ggml.tokens", ints(1, 2)), "tokenizer.ggml.tokens: array of int32", false},
		{"no token at all", set(tinyGPT2(), "tokenizer.ggml.tokens", strArray([]string{})), "tokenizer.ggml.tokens: empty", false},
		{"empty token", set(tinyGPT2(), "tokenizer.ggml.tokens", strArray([]string{"a", "b", "", "Ġ", "ab", "Ġab", "x", "y", "z"})), "tokenizer.ggml.tokens[2]: empty token", false},
		{"repeated token", set(tinyGPT2(), "tokenizer.ggml.tokens", strArray([]string{"a", "b", "c", "Ġ", "ab", "Ġab", "x", "a", "z"})), `tokenizer.ggml.tokens[7]: "a" is also token 0`, false},
		{"invalid UTF-8", set(tinyGPT2(), "tokenizer.ggml.tokens", strArray([]string{"a", "b", "c", "Ġ", "ab", "Ġab", "x", "\xff", "z"})), "is not UTF-8", false},
		{"types short", set(tinyGPT2(), "tokenizer.ggml.token_type", ints(1, 1)), "tokenizer.ggml.token_type: 2 entries for 9 tokens", false},
		{"type out of range", set(tinyGPT2(), "tokenizer.ggml.token_type", ints(1, 1, 1, 1, 9, 1, 3, 3, 4)), "tokenizer.ggml.token_type[4]: 9 is not a token type", false},
		{"types not integers", set(tinyGPT2(), "tokenizer.ggml.token_type", strArray([]string{"x"})), "want an array of integers", false},
		{"no merges", drop(tinyGPT2(), "tokenizer.ggml.merges"), "tokenizer.ggml.merges: missing", false},
		{"merge without a space", set(tinyGPT2(), "tokenizer.ggml.merges", strArray([]string{"ab"})), `tokenizer.ggml.merges[0]: "ab" is not two tokens`, false},
		{"merge of an unknown token", set(tinyGPT2(), "tokenizer.ggml.merges", strArray([]string{"a b", "a z"})), `merge 1: token "z" is not in the vocabulary`, false},
		{"merge into no token", set(tinyGPT2(), "tokenizer.ggml.merges", strArray([]string{"b c"})), `merge 0: token "bc" is not in the vocabulary`, false},
		{"unknown pre-tokenizer", set(tinyGPT2(), "tokenizer.ggml.pre", str("chameleon")), `tokenizer.ggml.pre "chameleon"`, true},
		{"no pre-tokenizer", drop(tinyGPT2(), "tokenizer.ggml.pre"), `tokenizer.ggml.pre: missing (supported: deepseek-r1-qwen, deepseek-v3`, true},
		{"BOS out of range", set(tinyGPT2(), "tokenizer.ggml.bos_token_id", u32(9)), "tokenizer.ggml.bos_token_id: id 9 is out of range (9 tokens)", false},
		{"EOS out of range", set(tinyGPT2(), "tokenizer.ggml.eos_token_id", u32(1<<31)), "tokenizer.ggml.eos_token_id: id 2147483648 is out of range", false},
		{"EOS negative", set(tinyGPT2(), "tokenizer.ggml.eos_token_id", gguf.Value{Type: gguf.TypeInt32, V: int64(-1)}), "tokenizer.ggml.eos_token_id: -1 (int32) is not a token id", false},
		{"EOT out of range", set(tinyGPT2(), "tokenizer.ggml.eot_token_id", u32(100)), "tokenizer.ggml.eot_token_id: id 100", false},
		{"BOS a string", set(tinyGPT2(), "tokenizer.ggml.bos_token_id", str("<s>")), "tokenizer.ggml.bos_token_id: <s> (string) is not a token id", false},
		{"no scores", drop(tinySPM(), "tokenizer.ggml.scores"), "tokenizer.ggml.scores: missing", false},
		{"scores short", set(tinySPM(), "tokenizer.ggml.scores", floats(0, 0)), "tokenizer.ggml.scores: 2 scores for 14 tokens", false},
		{"NaN score", set(tinySPM(), "tokenizer.ggml.scores", floats(nanScores...)), "tokenizer.ggml.scores[5]: NaN", false},
		{"unk out of range", set(tinySPM(), "tokenizer.ggml.unknown_token_id", u32(14)), "tokenizer.ggml.unknown_token_id: id 14 is out of range", false},
		{"extra whitespace removal", set(tinySPM(), "tokenizer.ggml.remove_extra_whitespaces", gguf.Value{Type: gguf.TypeBool, V: true}), "tokenizer.ggml.remove_extra_whitespaces", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := FromGGUF(writeGGUF(t, tc.kv))
			if err == nil {
				t.Fatalf("loaded (%d tokens), want an error with %q", tk.VocabSize(), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if errors.Is(err, ErrUnsupported) != tc.unsupported {
				t.Errorf("errors.Is(%v, ErrUnsupported) = %v, want %v", err, !tc.unsupported, tc.unsupported)
			}
		})
	}
}

// fuzzGGUF builds tokenizer metadata from the fuzzer's compact form:
// tokens and merges one a line, a token type and a score (its negation)
// per byte, special ids and flags.
func fuzzGGUF(t testing.TB, model, pre, tokens string, types []byte, merges string, scores []byte, bos, eos uint32, addBOS, prefix bool) *gguf.File {
	t.Helper()
	toks := strings.Split(tokens, "\n")
	ty := make([]int64, len(types))
	for i, b := range types {
		ty[i] = int64(b)
	}
	sc := make([]float64, len(scores))
	for i, b := range scores {
		sc[i] = -float64(b)
	}
	kv := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.Value{Type: gguf.TypeString, V: model}},
		{Key: "tokenizer.ggml.pre", Value: gguf.Value{Type: gguf.TypeString, V: pre}},
		{Key: "tokenizer.ggml.tokens", Value: strArray(toks)},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeInt32, V: ty}},
		{Key: "tokenizer.ggml.merges", Value: strArray(strings.Split(merges, "\n"))},
		{Key: "tokenizer.ggml.scores", Value: gguf.Value{Type: gguf.TypeArray, Elem: gguf.TypeFloat32, V: sc}},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Value{Type: gguf.TypeUint32, V: uint64(bos)}},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Value{Type: gguf.TypeUint32, V: uint64(eos)}},
		{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Value{Type: gguf.TypeBool, V: addBOS}},
		{Key: "tokenizer.ggml.add_space_prefix", Value: gguf.Value{Type: gguf.TypeBool, V: prefix}},
	}
	var b bytes.Buffer
	if err := gguf.Write(&b, kv, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// FuzzFromGGUF checks that any tokenizer metadata loads or fails with an
// error, never panics, and that a tokenizer it gives encodes to ids that
// are tokens, decodes to valid UTF-8, and names tokens as BOS and EOS.
func FuzzFromGGUF(f *testing.F) {
	f.Add("gpt2", "gpt-2", "a\nb\nc\nĠ\nab\nĠab\n<|bos|>\n<|eos|>\n<tool>", []byte{1, 1, 1, 1, 1, 1, 3, 3, 4}, "a b\nĠ ab", []byte{}, uint32(6), uint32(7), true, false)
	f.Add("gpt2", "qwen2", "a\nb\nab\n<|x|>", []byte{1, 1, 1, 3}, "a b", []byte{}, uint32(3), uint32(3), false, false)
	f.Add("llama", "default", "<unk>\n<s>\n</s>\n<0x21>\n▁\na\nb\nc\n▁a\nab\n▁b\nbc\n▁ab\n  ", []byte{2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4}, "", []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 4, 232}, uint32(1), uint32(2), true, true)
	f.Add("llama", "default", "<unk>\n▁\na\n▁a\naa\n▁▁\n ▁", []byte{2, 1, 1, 1, 1, 4, 4}, "", []byte{0, 0, 0, 0, 0, 0, 0}, uint32(0), uint32(0), false, false)
	f.Fuzz(func(t *testing.T, model, pre, tokens string, types []byte, merges string, scores []byte, bos, eos uint32, addBOS, prefix bool) {
		tk, err := FromGGUF(fuzzGGUF(t, model, pre, tokens, types, merges, scores, bos, eos, addBOS, prefix))
		if err != nil {
			return
		}
		for _, s := range fuzzProbes {
			for _, special := range []bool{false, true} {
				ids := tk.Encode(s, special)
				for _, id := range ids {
					if _, ok := tk.Token(id); !ok {
						t.Fatalf("Encode(%q) gives id %d, not a token", s, id)
					}
				}
				if got := tk.Decode(ids, false); !utf8.ValidString(got) {
					t.Fatalf("Decode gives invalid UTF-8 %q", got)
				}
			}
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
