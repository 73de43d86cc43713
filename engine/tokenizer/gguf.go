package tokenizer

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"hearth/engine/gguf"
)

// Building a tokenizer from a GGUF file's tokenizer.ggml.* metadata: the
// same Tokenizer that the model's tokenizer.json gives, from the vocabulary
// llama.cpp's converter (convert_hf_to_gguf.py) wrote. docs/design/tokenizer.md
// says what it reads and where GGUF cannot say what tokenizer.json says.

// GGUF token types (tokenizer.ggml.token_type, llama.cpp's llama_token_type).
const (
	ggufTypeNormal      = 1
	ggufTypeUnknown     = 2
	ggufTypeControl     = 3
	ggufTypeUserDefined = 4
	ggufTypeUnused      = 5
	ggufTypeByte        = 6
)

// ggufPre is what a tokenizer.ggml.pre name stands for: the normalizer and
// pre-tokenizer of the tokenizer.json llama.cpp's converter recognizes by
// that name (convert_hf_to_gguf.py's get_vocab_base_pre), written as that
// file writes them, and the BPE options llama.cpp's llama_vocab::load sets
// for it.
type ggufPre struct {
	normalizer   string // tokenizer.json JSON; "" for none
	pre          string // "" for none
	decoder      string // "" for ByteLevel
	ignoreMerges bool
	addBOS       bool // llama.cpp's default when add_bos_token is absent
}

// Pre-tokenizers of the byte-level tokenizer.json files, as they write them.
const (
	llama3Split   = `{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false}`
	qwen2Split    = `{"type":"Split","pattern":{"Regex":"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false}`
	gpt4oSplit    = `{"type":"Split","pattern":{"Regex":"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false}`
	deepseek3Pre  = `{"type":"Split","pattern":{"Regex":"\\p{N}{1,3}"},"behavior":"Isolated","invert":false},{"type":"Split","pattern":{"Regex":"[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"},"behavior":"Isolated","invert":false},{"type":"Split","pattern":{"Regex":"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_\u0060{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false}`
	byteLevelOnly = `{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}`
	gpt2ByteLevel = `{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}`
)

func splitThenByteLevel(splits string) string {
	return `{"type":"Sequence","pretokenizers":[` + splits + `,` + byteLevelOnly + `]}`
}

// ggufPres maps the tokenizer.ggml.pre names Hearth knows to their
// tokenizer.json configuration. The tested ones are checked against the
// reference tokenizers (gguf_test.go); the others are the well-known
// tokenizer.json of their family, not tested here.
var ggufPres = map[string]ggufPre{
	// Llama 3 (tested: llama3, llama3_1).
	"llama-bpe": {pre: splitThenByteLevel(llama3Split), ignoreMerges: true, addBOS: true},
	"llama3":    {pre: splitThenByteLevel(llama3Split), ignoreMerges: true, addBOS: true},
	"llama-v3":  {pre: splitThenByteLevel(llama3Split), ignoreMerges: true, addBOS: true},
	// Qwen 2, 2.5 and 3 (tested: qwen3).
	"qwen2":            {normalizer: `{"type":"NFC"}`, pre: splitThenByteLevel(qwen2Split)},
	"deepseek-r1-qwen": {normalizer: `{"type":"NFC"}`, pre: splitThenByteLevel(qwen2Split)},
	// DeepSeek V3 and R1 (tested: deepseek_v3).
	"deepseek-v3": {pre: splitThenByteLevel(deepseek3Pre)},
	// o200k: GPT-OSS (tested: gptoss).
	"gpt-4o": {pre: splitThenByteLevel(gpt4oSplit), ignoreMerges: true},
	// GPT-2's own ByteLevel regex; SmolLM splits digits first.
	"gpt-2":  {pre: gpt2ByteLevel},
	"smollm": {pre: `{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},` + gpt2ByteLevel + `]}`},
}

// FromGGUF builds the tokenizer described by a GGUF file's metadata:
// tokenizer.ggml.model "gpt2" (byte-level BPE: tokens, merges, and the
// pre-tokenizer named by tokenizer.ggml.pre) or "llama" (SentencePiece BPE:
// tokens and scores), token types (control and user-defined tokens become
// added tokens, control ones special), the BOS/EOS/unknown ids and
// add_bos_token/add_eos_token.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	t, err := fromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("gguf tokenizer: %w", err)
	}
	return t, nil
}

// ggufMeta is the tokenizer metadata of a GGUF file, read and checked.
type ggufMeta struct {
	model  string
	tokens []string
	types  []int64   // per token; all normal when the file has none
	scores []float64 // "llama" only
	merges []string  // "gpt2" only
}

func readGGUFMeta(f *gguf.File) (*ggufMeta, error) {
	m := &ggufMeta{}
	var err error
	if m.model, err = ggufString(f, "tokenizer.ggml.model", true); err != nil {
		return nil, err
	}
	if m.model != "gpt2" && m.model != "llama" {
		return nil, fmt.Errorf("%w: tokenizer.ggml.model %q (supported: gpt2, llama)", ErrUnsupported, m.model)
	}
	if m.tokens, err = ggufArray[string](f, "tokenizer.ggml.tokens", true); err != nil {
		return nil, err
	}
	if len(m.tokens) == 0 {
		return nil, fmt.Errorf("tokenizer.ggml.tokens: empty")
	}
	if m.types, err = ggufInts(f, "tokenizer.ggml.token_type", len(m.tokens)); err != nil {
		return nil, err
	}
	if m.types == nil {
		m.types = make([]int64, len(m.tokens))
		for i := range m.types {
			m.types[i] = ggufTypeNormal
		}
	}
	for i, ty := range m.types {
		if ty < ggufTypeNormal || ty > ggufTypeByte {
			return nil, fmt.Errorf("tokenizer.ggml.token_type[%d]: %d is not a token type (1 to 6)", i, ty)
		}
	}
	seen := make(map[string]int, len(m.tokens))
	for i, tok := range m.tokens {
		if tok == "" {
			return nil, fmt.Errorf("tokenizer.ggml.tokens[%d]: empty token", i)
		}
		if !utf8.ValidString(tok) {
			return nil, fmt.Errorf("tokenizer.ggml.tokens[%d]: %q is not UTF-8", i, tok)
		}
		if j, dup := seen[tok]; dup {
			return nil, fmt.Errorf("tokenizer.ggml.tokens[%d]: %q is also token %d", i, tok, j)
		}
		seen[tok] = i
	}
	if m.model == "llama" {
		if m.scores, err = ggufArray[float64](f, "tokenizer.ggml.scores", true); err != nil {
			return nil, err
		}
		if len(m.scores) != len(m.tokens) {
			return nil, fmt.Errorf("tokenizer.ggml.scores: %d scores for %d tokens", len(m.scores), len(m.tokens))
		}
		for i, s := range m.scores {
			if math.IsNaN(s) {
				return nil, fmt.Errorf("tokenizer.ggml.scores[%d]: NaN", i)
			}
		}
	} else if m.merges, err = ggufArray[string](f, "tokenizer.ggml.merges", true); err != nil {
		return nil, err
	}
	return m, nil
}

// tokenID reads an optional token id key, checked against the vocabulary.
func (m *ggufMeta) tokenID(f *gguf.File, key string) (int32, bool, error) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false, nil
	}
	id, isInt := f.Uint(key)
	if !isInt {
		return 0, false, fmt.Errorf("%s: %v (%s) is not a token id", key, v.V, v.Type)
	}
	if id >= uint64(len(m.tokens)) {
		return 0, false, fmt.Errorf("%s: id %d is out of range (%d tokens)", key, id, len(m.tokens))
	}
	return int32(id), true, nil
}

func fromGGUF(f *gguf.File) (*Tokenizer, error) {
	m, err := readGGUFMeta(f)
	if err != nil {
		return nil, err
	}
	spm := m.model == "llama"
	var cfg ggufPre
	if spm {
		if rm, _ := ggufBool(f, "tokenizer.ggml.remove_extra_whitespaces"); rm {
			return nil, fmt.Errorf("%w: tokenizer.ggml.remove_extra_whitespaces", ErrUnsupported)
		}
		prefix := true // llama.cpp's default for SentencePiece
		if v, ok := ggufBool(f, "tokenizer.ggml.add_space_prefix"); ok {
			prefix = v
		}
		cfg = spmConfig(prefix)
	} else {
		name, err := ggufString(f, "tokenizer.ggml.pre", false)
		if err != nil {
			return nil, err
		}
		var ok bool
		if cfg, ok = ggufPres[name]; !ok {
			known := make([]string, 0, len(ggufPres))
			for k := range ggufPres {
				known = append(known, k)
			}
			slices.Sort(known)
			what := fmt.Sprintf("tokenizer.ggml.pre %q", name)
			if name == "" {
				what = "tokenizer.ggml.pre: missing"
			}
			return nil, fmt.Errorf("%w: %s (supported: %s)", ErrUnsupported, what, strings.Join(known, ", "))
		}
	}

	t := &Tokenizer{}
	if t.pre, err = parsePreTokenizer([]byte(cfg.pre)); err != nil {
		return nil, err
	}
	if cfg.normalizer != "" {
		if t.normalizer, err = parseNormalizer([]byte(cfg.normalizer)); err != nil {
			return nil, err
		}
	}
	byteLevelWords, err := endsWithByteLevel(t.pre)
	if err != nil {
		return nil, err
	}

	// Every token is in the model's vocabulary, as in llama.cpp: merges
	// may build a token that is also an added one. Added tokens are cut
	// out of the raw text before the model sees it, so one that only
	// tokenizer.json's added_tokens holds is never reached otherwise.
	tokens := m.tokens
	if spm {
		// convert_hf_to_gguf.py writes a user-defined piece's "▁" as a
		// space ("pre-normalize user-defined spaces"); a SentencePiece
		// piece is in normalized form, where every space is "▁".
		// A piece that would then clash with another keeps its spaces.
		tokens = slices.Clone(tokens)
		have := make(map[string]bool, len(tokens))
		for _, tok := range tokens {
			have[tok] = true
		}
		for i, ty := range m.types {
			if r := strings.ReplaceAll(tokens[i], " ", "▁"); ty == ggufTypeUserDefined && !have[r] {
				tokens[i] = r
				have[r] = true
			}
		}
	}
	mj := &modelJSON{hasVocab: true, maxID: -1}
	for i, tok := range tokens {
		mj.vocab = append(mj.vocab, tok...)
		mj.vocabEnds = append(mj.vocabEnds, uint32(len(mj.vocab)))
		mj.vocabIDs = append(mj.vocabIDs, int32(i))
		mj.maxID = int32(i)
	}
	if len(mj.vocab) > math.MaxUint32 {
		return nil, fmt.Errorf("tokenizer.ggml.tokens: vocabulary too large")
	}
	mj.fields = modelFields{Type: "BPE", IgnoreMerges: cfg.ignoreMerges}
	unk, hasUnk, err := m.tokenID(f, "tokenizer.ggml.unknown_token_id")
	if err != nil {
		return nil, err
	}
	if spm {
		mj.fields.ByteFallback, mj.fields.FuseUnk = true, true
		if !hasUnk {
			unk = int32(slices.Index(m.types, ggufTypeUnknown))
			hasUnk = unk >= 0
		}
		if hasUnk {
			mj.fields.UnkToken = &tokens[unk]
		}
	} else {
		for i, s := range m.merges {
			// llama.cpp splits at the first space after the first byte.
			sp := -1
			if len(s) > 1 {
				if k := strings.IndexByte(s[1:], ' '); k >= 0 {
					sp = k + 1
				}
			}
			if sp < 0 {
				return nil, fmt.Errorf("tokenizer.ggml.merges[%d]: %q is not two tokens separated by a space", i, s)
			}
			mj.merges = append(mj.merges, s[:sp]...)
			mj.mergeEnds = append(mj.mergeEnds, uint32(len(mj.merges)))
			mj.merges = append(mj.merges, s[sp+1:]...)
			mj.mergeEnds = append(mj.mergeEnds, uint32(len(mj.merges)))
		}
		if len(mj.merges) > math.MaxUint32 {
			return nil, fmt.Errorf("tokenizer.ggml.merges: too large")
		}
	}
	vocab, err := mj.build(t, byteLevelWords)
	if err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	if spm {
		t.model.merges = spmMerges(tokens, m.scores, vocab)
	}
	dec := cfg.decoder
	if dec == "" {
		dec = `{"type":"ByteLevel"}`
	}
	if t.decoder, err = parseDecoder([]byte(dec)); err != nil {
		return nil, err
	}
	if err := t.addGGUFTokens(tokens, m.types, vocab); err != nil {
		return nil, err
	}
	if err := t.ggufSpecials(f, m, cfg); err != nil {
		return nil, err
	}
	t.setBounds()
	t.byteFallback = hasByteFallback(t.decoder)
	if _, ok := t.decoder.(byteLevelDec); ok && t.model.byteLevel {
		t.rawBytes = t.decodedBytes()
	}
	return t, nil
}

// spmConfig is the tokenizer.json transformers writes for a SentencePiece
// BPE model (LlamaConverter, GemmaConverter): spaces become "▁", with one
// prepended to each piece of text between added tokens when add_space_prefix
// (as llama.cpp does after every special token), and the reverse on decoding.
func spmConfig(addSpacePrefix bool) ggufPre {
	const replace = `{"type":"Replace","pattern":{"String":" "},"content":"▁"}`
	const dec = `{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}`
	if addSpacePrefix {
		return ggufPre{
			normalizer: `{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},` + replace + `]}`,
			decoder:    `{"type":"Sequence","decoders":[` + dec + `,{"type":"Strip","content":" ","start":1,"stop":0}]}`,
			addBOS:     true,
		}
	}
	return ggufPre{normalizer: replace, decoder: `{"type":"Sequence","decoders":[` + dec + `]}`, addBOS: true}
}

// spmMerges makes the merges SentencePiece's BPE applies: any two adjacent
// pieces whose concatenation is a piece, the highest-scoring concatenation
// first and the leftmost of equal scores (sentencepiece's bpe_model.cc,
// llama.cpp's llm_tokenizer_spm). Equal scores get equal ranks, and the
// merge loop takes the leftmost of equal ranks. Every split of every piece
// is looked up, in batches on all cores as resolveMerges does: Gemma 3 has
// two million splits.
func spmMerges(tokens []string, scores []float64, vocab *strTable) *pairTable {
	order := slices.Clone(scores)
	slices.SortFunc(order, func(a, b float64) int { return cmp.Compare(b, a) })
	order = slices.Compact(order)
	workers := min(runtime.GOMAXPROCS(0), 1+len(tokens)/20000)
	found := make([][]uint64, workers) // per worker: pairKey, rank<<32 | id
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var keys [batchSize]string
			var ids [batchSize]int32
			var out [batchSize / 2]int32
			n := 0
			flush := func() {
				vocab.getBatch(keys[:n], ids[:n])
				for j := 0; j < n; j += 2 {
					if a, b := ids[j], ids[j+1]; a >= 0 && b >= 0 {
						id := out[j/2]
						rank, _ := slices.BinarySearchFunc(order, scores[id], func(x, s float64) int { return cmp.Compare(s, x) })
						found[w] = append(found[w], pairKey(a, b), uint64(rank)<<32|uint64(uint32(id)))
					}
				}
				n = 0
			}
			for id := w * len(tokens) / workers; id < (w+1)*len(tokens)/workers; id++ {
				tok := tokens[id]
				if got, ok := vocab.get(tok); !ok || got != int32(id) {
					continue // not a piece of the model
				}
				for k := 1; k < len(tok); k++ {
					if !utf8.RuneStart(tok[k]) {
						continue
					}
					keys[n], keys[n+1], out[n/2] = tok[:k], tok[k:], int32(id)
					if n += 2; n == batchSize {
						flush()
					}
				}
			}
			flush()
		}()
	}
	wg.Wait()
	count := 0
	for _, f := range found {
		count += len(f) / 2
	}
	pt := newPairTable(count)
	for _, f := range found {
		for i := 0; i < len(f); i += 2 {
			pt.put(f[i], f[i+1])
		}
	}
	return pt
}

// addGGUFTokens makes the control, user-defined and unknown tokens added
// tokens, matched in the raw text as llama.cpp matches them; control and
// unknown ones are special (skipped by Decode with skipSpecial).
func (t *Tokenizer) addGGUFTokens(tokens []string, types []int64, vocab *strTable) error {
	var toks []*addedToken
	for i, ty := range types {
		if ty == ggufTypeControl || ty == ggufTypeUserDefined || ty == ggufTypeUnknown {
			toks = append(toks, &addedToken{ID: int32(i), Content: tokens[i], Special: ty != ggufTypeUserDefined})
		}
	}
	raw, err := json.Marshal(toks)
	if err != nil {
		return err
	}
	return t.addTokens(raw, vocab)
}

// ggufSpecials sets BOS, EOS and what Encode adds with addSpecial.
func (t *Tokenizer) ggufSpecials(f *gguf.File, m *ggufMeta, cfg ggufPre) error {
	var err error
	if t.bos, t.hasBOS, err = m.tokenID(f, "tokenizer.ggml.bos_token_id"); err != nil {
		return err
	}
	for _, key := range []string{"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		id, ok, err := m.tokenID(f, key)
		if err != nil {
			return err
		}
		if ok && !slices.Contains(t.eos, id) {
			t.eos = append(t.eos, id)
		}
	}
	addBOS, addEOS := cfg.addBOS, false
	if v, ok := ggufBool(f, "tokenizer.ggml.add_bos_token"); ok {
		addBOS = v
	}
	if v, ok := ggufBool(f, "tokenizer.ggml.add_eos_token"); ok {
		addEOS = v
	}
	t.post = nil
	if addBOS && t.hasBOS {
		t.post = append(t.post, templatePart{ids: []int32{t.bos}})
	}
	t.post = append(t.post, templatePart{})
	if addEOS && len(t.eos) > 0 {
		t.post = append(t.post, templatePart{ids: []int32{t.eos[0]}})
	}
	return nil
}

// ggufString reads a string key; a missing required key is an error.
func ggufString(f *gguf.File, key string, required bool) (string, error) {
	v, ok := f.Get(key)
	if !ok {
		if required {
			return "", fmt.Errorf("%s: missing", key)
		}
		return "", nil
	}
	s, ok := v.V.(string)
	if !ok {
		return "", fmt.Errorf("%s: %s, want a string", key, v.Type)
	}
	return s, nil
}

// ggufBool reads a bool key.
func ggufBool(f *gguf.File, key string) (bool, bool) {
	v, ok := f.Get(key)
	b, isBool := v.V.(bool)
	return b, ok && isBool
}

// ggufArray reads an array key whose elements are held as T.
func ggufArray[T any](f *gguf.File, key string, required bool) ([]T, error) {
	v, ok := f.Get(key)
	if !ok {
		if required {
			return nil, fmt.Errorf("%s: missing", key)
		}
		return nil, nil
	}
	xs, ok := v.V.([]T)
	if !ok {
		var want T
		return nil, fmt.Errorf("%s: %s of %s, want an array of %T", key, v.Type, v.Elem, want)
	}
	return xs, nil
}

// ggufInts reads an optional array of integers of n elements.
func ggufInts(f *gguf.File, key string, n int) ([]int64, error) {
	v, ok := f.Get(key)
	if !ok {
		return nil, nil
	}
	var out []int64
	switch xs := v.V.(type) {
	case []int64:
		out = xs
	case []uint64:
		out = make([]int64, len(xs))
		for i, x := range xs {
			out[i] = int64(min(x, math.MaxInt64))
		}
	default:
		return nil, fmt.Errorf("%s: %s of %s, want an array of integers", key, v.Type, v.Elem)
	}
	if len(out) != n {
		return nil, fmt.Errorf("%s: %d entries for %d tokens", key, len(out), n)
	}
	return out, nil
}
