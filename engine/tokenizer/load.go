package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"hearth/engine/gguf"
)

// ErrUnsupported is wrapped by load errors for tokenizer.json components
// (models, normalizers, pre-tokenizers, post-processors, decoders) that this
// package does not implement.
var ErrUnsupported = errors.New("unsupported tokenizer component")

// unsupported names the component kind and type, and lists the supported ones.
func unsupported(kind, typ string, supported ...string) error {
	return fmt.Errorf("%w %s %q (supported: %s)", ErrUnsupported, kind, typ, strings.Join(supported, ", "))
}

// Load reads dir/tokenizer.json and, when present, dir/tokenizer_config.json
// (with dir/special_tokens_map.json as a fallback for bos_token/eos_token).
// A GGUF checkpoint (dir a .gguf file, or a folder holding one model:
// gguf.Find) carries its tokenizer in its metadata (FromGGUF).
func Load(dir string) (*Tokenizer, error) {
	if path, _ := gguf.Find(dir); path != "" {
		m, err := gguf.Open(path)
		if err != nil {
			return nil, fmt.Errorf("load tokenizer: %w", err)
		}
		return FromGGUF(m.Meta())
	}
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	special, err := os.ReadFile(filepath.Join(dir, "special_tokens_map.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := fromJSON(tj, cfg, special)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", dir, err)
	}
	return t, nil
}

// FromJSON builds a tokenizer from the bytes of tokenizer.json and, if not
// nil, tokenizer_config.json.
func FromJSON(tokenizerJSON, tokenizerConfigJSON []byte) (*Tokenizer, error) {
	return fromJSON(tokenizerJSON, tokenizerConfigJSON, nil)
}

func fromJSON(tj, cfg, specialMap []byte) (*Tokenizer, error) {
	// One pass over the file: the model (nearly all of it) is scanned in
	// place, the other members are kept raw for encoding/json.
	s := &jsonScanner{b: tj}
	top := map[string][]byte{}
	var model *modelJSON
	err := s.object(func(key string) error {
		if key == "model" && s.peek() == '{' {
			var err error
			model, err = scanModel(s)
			if err != nil {
				return fmt.Errorf("model: %w", err)
			}
			return nil
		}
		v, err := s.skip()
		top[key] = v
		return err
	})
	if err == nil && s.peek() != 0 {
		err = s.errorf("data after the top-level value")
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if model == nil {
		return nil, fmt.Errorf("tokenizer.json: model: missing")
	}
	t := &Tokenizer{}
	if t.pre, err = parsePreTokenizer(top["pre_tokenizer"]); err != nil {
		return nil, fmt.Errorf("tokenizer.json: pre_tokenizer: %w", err)
	}
	byteLevelWords, err := endsWithByteLevel(t.pre)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: pre_tokenizer: %w", err)
	}
	vocab, err := model.build(t, byteLevelWords)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: model: %w", err)
	}
	if t.normalizer, err = parseNormalizer(top["normalizer"]); err != nil {
		return nil, fmt.Errorf("tokenizer.json: normalizer: %w", err)
	}
	if t.decoder, err = parseDecoder(top["decoder"]); err != nil {
		return nil, fmt.Errorf("tokenizer.json: decoder: %w", err)
	}
	if err := t.addTokens(top["added_tokens"], vocab); err != nil {
		return nil, fmt.Errorf("tokenizer.json: added_tokens: %w", err)
	}
	if t.post, err = parsePostProcessor(top["post_processor"], t); err != nil {
		return nil, fmt.Errorf("tokenizer.json: post_processor: %w", err)
	}
	for _, p := range t.post {
		for _, id := range p.ids {
			if id < 0 || id > t.maxID {
				return nil, fmt.Errorf("tokenizer.json: post_processor: special token id %d is not a token", id)
			}
		}
	}
	t.setBounds()
	t.byteFallback = hasByteFallback(t.decoder)
	if _, ok := t.decoder.(byteLevelDec); ok && t.model.byteLevel {
		t.rawBytes = t.decodedBytes()
	}
	if err := t.readConfig(cfg, specialMap); err != nil {
		return nil, err
	}
	return t, nil
}

// hasByteFallback reports whether d is or contains a ByteFallback decoder.
func hasByteFallback(d decoder) bool {
	switch d := d.(type) {
	case byteFallbackDec:
		return true
	case decoderSeq:
		for _, x := range d {
			if hasByteFallback(x) {
				return true
			}
		}
	}
	return false
}

// endsWithByteLevel reports whether the pre-tokenizer maps words to
// byte-level characters, which we support only as its last step.
func endsWithByteLevel(pt preTokenizer) (bool, error) {
	steps := []preTokenizer{pt}
	if q, ok := pt.(preTokenizerSeq); ok {
		steps = q
	}
	for i, s := range steps {
		if _, ok := s.(*byteLevelPre); ok {
			if i != len(steps)-1 {
				return false, fmt.Errorf("%w: ByteLevel must be the last pre-tokenizer of a Sequence", ErrUnsupported)
			}
			return true, nil
		}
	}
	return false, nil
}

// addTokens registers added_tokens. Like the reference, a token whose content
// is in the model's vocabulary takes that id.
func (t *Tokenizer) addTokens(raw []byte, vocab *strTable) error {
	var toks []*addedToken
	if !isNull(raw) {
		if err := json.Unmarshal(raw, &toks); err != nil {
			return err
		}
	}
	t.added = make(map[int32]*addedToken, len(toks))
	t.byText = make(map[string]int32, len(toks))
	t.special = map[string]bool{}
	t.raw, t.norm = newTrie(), newTrie()
	for i, a := range toks {
		if a.Content == "" {
			continue
		}
		if id, ok := vocab.get(a.Content); ok {
			a.ID = id
		}
		if a.ID < 0 || int(a.ID) > maxTokenID(vocab.len()+len(toks)) {
			return fmt.Errorf("%d: %q has id %d, out of range", i, a.Content, a.ID)
		}
		if a.Special {
			t.special[a.Content] = true
		}
		t.added[a.ID] = a
		t.byText[a.Content] = a.ID
		t.maxID = max(t.maxID, a.ID)
	}
	// The reference matches special tokens first, then the others, each in
	// file order; the first of two identical patterns wins.
	for _, special := range []bool{true, false} {
		for _, a := range toks {
			if a.Content == "" || a.Special != special {
				continue
			}
			if !a.Normalized {
				t.raw.add(a.Content, a)
				continue
			}
			content := a.Content
			if t.normalizer != nil {
				content = t.normalizer.normalize(content)
			}
			t.norm.add(content, a)
		}
	}
	return nil
}

// decodedBytes returns, per id, the bytes the ByteLevel decoder gives it.
func (t *Tokenizer) decodedBytes() []string {
	ends := make([]int, t.maxID+1)
	var buf []byte
	for id := range ends {
		if tok, ok := t.Token(int32(id)); ok {
			var mapped bool
			n := len(buf)
			if buf, mapped = unByteLevel(buf, tok); !mapped {
				buf = append(buf[:n], tok...)
			}
		}
		ends[id] = len(buf)
	}
	arena := string(buf)
	out := make([]string, len(ends))
	start := 0
	for id, end := range ends {
		out[id], start = arena[start:end], end
	}
	return out
}

// tokenConfig is the part of tokenizer_config.json (or special_tokens_map.json)
// we read.
type tokenConfig struct {
	BOS json.RawMessage `json:"bos_token"`
	EOS json.RawMessage `json:"eos_token"`
}

// readConfig sets BOS and EOS from tokenizer_config.json, falling back to
// special_tokens_map.json for a missing entry.
func (t *Tokenizer) readConfig(cfg, specialMap []byte) error {
	var c, m tokenConfig
	if cfg != nil {
		if err := json.Unmarshal(cfg, &c); err != nil {
			return fmt.Errorf("tokenizer_config.json: %w", err)
		}
	}
	if specialMap != nil {
		if err := json.Unmarshal(specialMap, &m); err != nil {
			return fmt.Errorf("special_tokens_map.json: %w", err)
		}
	}
	bos, err := tokenContent(c.BOS, m.BOS)
	if err != nil {
		return fmt.Errorf("tokenizer_config.json: bos_token: %w", err)
	}
	eos, err := tokenContent(c.EOS, m.EOS)
	if err != nil {
		return fmt.Errorf("tokenizer_config.json: eos_token: %w", err)
	}
	if bos != "" {
		if t.bos, t.hasBOS = t.TokenID(bos); !t.hasBOS {
			return fmt.Errorf("tokenizer_config.json: bos_token %q is not a token", bos)
		}
	}
	if eos != "" {
		id, ok := t.TokenID(eos)
		if !ok {
			return fmt.Errorf("tokenizer_config.json: eos_token %q is not a token", eos)
		}
		t.eos = []int32{id}
	}
	return nil
}

// tokenContent reads a token written as a string or as an AddedToken object
// ({"content": …}), from the first of raws that is set.
func tokenContent(raws ...json.RawMessage) (string, error) {
	for _, raw := range raws {
		if isNull(raw) {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, nil
		}
		var obj struct {
			Content string `json:"content"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", fmt.Errorf("want a string or an object with \"content\": %w", err)
		}
		return obj.Content, nil
	}
	return "", nil
}
