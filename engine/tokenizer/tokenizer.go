// Package tokenizer encodes and decodes text exactly as a checkpoint's
// tokenizer.json does under Hugging Face tokenizers.
//
// It is a pure-Go port of the parts of the Rust library that checkpoints
// use: the BPE model (byte-level and SentencePiece-style), added and special
// tokens, the common normalizers, pre-tokenizers, post-processors and
// decoders, and a streaming detokenizer. docs/design/tokenizer.md says what
// is supported and how it is checked against the reference.
package tokenizer

import (
	"strings"
	"sync"
)

// Tokenizer is a loaded tokenizer.json (plus tokenizer_config.json). It is
// safe for concurrent use.
type Tokenizer struct {
	model      *bpe
	normalizer normalizer   // nil: none
	pre        preTokenizer // nil: none
	decoder    decoder      // nil: tokens joined with spaces
	post       []templatePart

	added   map[int32]*addedToken // by id
	byText  map[string]int32      // added token content → id
	special map[string]bool       // contents of special added tokens
	raw     *trie                 // added tokens matched before normalization
	norm    *trie                 // added tokens matched after normalization
	maxID   int32

	// rawBytes holds, for a byte-level decoder, each id's decoded bytes.
	rawBytes []string
	// byteFallback is whether the decoder joins <0xNN> tokens.
	byteFallback bool

	bos    int32
	hasBOS bool
	eos    []int32

	pool sync.Pool // *encoder
}

// templatePart is one item of the post-processor's single-sequence template:
// special-token ids, or the encoded sequence itself (ids == nil).
type templatePart struct {
	ids []int32
}

// encoder holds the scratch state of one Encode call, and a cache of words
// already encoded (reused across calls through the pool).
type encoder struct {
	cache  map[string][]int32
	syms   []symbol
	heap   []uint64
	unkID  int32
	unkLen int
	buf    []byte
	spans  []span
	parts  []part
	segs   []segment
	segs2  []segment
	pieces []piece
}

func (t *Tokenizer) getEncoder() *encoder {
	if e, ok := t.pool.Get().(*encoder); ok {
		return e
	}
	return &encoder{cache: make(map[string][]int32, 1024)}
}

// putEncoder returns e to the pool, first dropping its references into the
// input so that a pooled encoder does not keep the last text alive.
func (t *Tokenizer) putEncoder(e *encoder) {
	clear(e.segs[:cap(e.segs)])
	clear(e.segs2[:cap(e.segs2)])
	clear(e.pieces[:cap(e.pieces)])
	t.pool.Put(e)
}

// Encode returns the token ids of text. With addSpecial, the post-processor's
// template adds its special tokens (BOS and the like), as Rust's
// encode(text, add_special_tokens) does. Invalid UTF-8 in text is first
// replaced with U+FFFD.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	text = validUTF8(text)
	e := t.getEncoder()
	defer t.putEncoder(e)
	ids := make([]int32, 0, len(text)/3+4)
	if !addSpecial {
		return t.encode(e, ids, text)
	}
	for _, p := range t.post {
		if p.ids == nil {
			ids = t.encode(e, ids, text)
		} else {
			ids = append(ids, p.ids...)
		}
	}
	return ids
}

// encode appends the ids of text without special-token templates.
func (t *Tokenizer) encode(e *encoder, ids []int32, text string) []int32 {
	e.segs = t.raw.split(e.segs[:0], text, true)
	for _, seg := range e.segs {
		if seg.tok != nil {
			ids = append(ids, seg.tok.ID)
			continue
		}
		s := seg.text
		if t.normalizer != nil {
			s = t.normalizer.normalize(s)
		}
		e.segs2 = t.norm.split(e.segs2[:0], s, seg.first)
		for _, sub := range e.segs2 {
			if sub.tok != nil {
				ids = append(ids, sub.tok.ID)
				continue
			}
			ids = t.encodeWords(e, ids, piece{s: sub.text, first: sub.first})
		}
	}
	return ids
}

// encodeWords pre-tokenizes one piece of normalized text and encodes each word.
func (t *Tokenizer) encodeWords(e *encoder, ids []int32, p piece) []int32 {
	if t.pre == nil {
		return t.model.tokenize(e, ids, p.s)
	}
	e.pieces = t.pre.preTokenize(e, e.pieces[:0], p)
	for _, w := range e.pieces {
		ids = t.model.tokenize(e, ids, w.s)
	}
	return ids
}

// Decode returns the text of ids, dropping special tokens when skipSpecial.
// Ids that name no token are skipped, as the reference does.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	if t.rawBytes != nil {
		var b []byte
		for _, id := range ids {
			if id < 0 || int(id) >= len(t.rawBytes) || (skipSpecial && t.IsSpecial(id)) {
				continue
			}
			b = append(b, t.rawBytes[id]...)
		}
		return lossyUTF8(b)
	}
	tokens := make([]string, 0, len(ids))
	for _, id := range ids {
		tok, ok := t.Token(id)
		if !ok || (skipSpecial && t.special[tok]) {
			continue
		}
		tokens = append(tokens, tok)
	}
	if t.decoder == nil {
		return strings.Join(tokens, " ")
	}
	return strings.Join(t.decoder.decodeChain(tokens), "")
}

// TokenID returns the id of a token string (an added token or a vocabulary
// entry, as written in tokenizer.json).
func (t *Tokenizer) TokenID(piece string) (int32, bool) {
	if id, ok := t.byText[piece]; ok {
		return id, true
	}
	if t.model.byteLevel {
		b, ok := unByteLevel(nil, piece)
		if !ok {
			id, ok := t.model.unmapped[piece]
			return id, ok
		}
		piece = string(b)
	}
	id, ok := t.model.vocab.get(piece)
	return id, ok
}

// Token returns the token string of id, as written in tokenizer.json.
func (t *Tokenizer) Token(id int32) (string, bool) {
	if a, ok := t.added[id]; ok {
		return a.Content, true
	}
	if id < 0 || int(id) >= len(t.model.tokens) || t.model.tokens[id] == "" {
		return "", false
	}
	return t.model.tokens[id], true
}

// VocabSize returns one more than the largest id of the vocabulary and the
// added tokens: the number of rows an embedding table needs.
func (t *Tokenizer) VocabSize() int { return int(t.maxID) + 1 }

// IsSpecial reports whether id is a special token (skipped by Decode with
// skipSpecial).
func (t *Tokenizer) IsSpecial(id int32) bool {
	tok, ok := t.Token(id)
	return ok && t.special[tok]
}

// BOS returns the beginning-of-sequence id named by tokenizer_config.json's
// bos_token.
func (t *Tokenizer) BOS() (int32, bool) { return t.bos, t.hasBOS }

// EOS returns the end-of-sequence ids named by tokenizer_config.json's
// eos_token.
func (t *Tokenizer) EOS() []int32 { return append([]int32(nil), t.eos...) }

// AddsBOS reports whether Encode(text, true) starts with BOS, so that a chat
// template that writes BOS itself can be encoded without a second one.
func (t *Tokenizer) AddsBOS() bool {
	return t.hasBOS && len(t.post) > 0 && len(t.post[0].ids) > 0 && t.post[0].ids[0] == t.bos
}
