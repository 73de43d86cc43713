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
	// postIDs counts the special ids of post: what addSpecial adds.
	postIDs int

	// Bounds on the bytes one token stands for (bound.go), 0 when there
	// is none: of a pre-tokenized word, of normalized text between added
	// tokens, and of the input.
	wordBytes, segBytes, textBytes int

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
	t      *Tokenizer
	cache  map[string][]int32
	syms   []symbol
	heap   []uint64
	unkID  int32
	unkLen int
	buf    []byte

	ids   []int32 // the ids so far
	limit int     // give up once more than limit ids are certain; < 0: never
	bound int     // when a bound made it give up: the count the bound proved

	// The steps of encode as funcs, made once per encoder so that a call
	// makes no closures.
	onSegment, onNormalized func(segment) bool
	onWord                  func(piece) bool
}

// maxPooledScratch is the most elements a pooled encoder keeps of a scratch
// slice: a long word grows them, and the pool must not hold on to the
// memory of the longest word it ever saw.
const maxPooledScratch = 1 << 16

func (t *Tokenizer) getEncoder() *encoder {
	if e, ok := t.pool.Get().(*encoder); ok {
		return e
	}
	e := &encoder{t: t, cache: make(map[string][]int32, 1024)}
	e.onSegment, e.onNormalized, e.onWord = e.segment, e.normalized, e.word
	return e
}

// putEncoder returns e to the pool, first dropping its references into the
// input and its outsized scratch, so that a pooled encoder keeps neither
// the last text nor the memory of a big one alive.
func (t *Tokenizer) putEncoder(e *encoder) {
	e.ids = nil
	if cap(e.syms) > maxPooledScratch {
		e.syms = nil
	}
	if cap(e.heap) > maxPooledScratch {
		e.heap = nil
	}
	if cap(e.buf) > maxPooledScratch {
		e.buf = nil
	}
	t.pool.Put(e)
}

// Encode returns the token ids of text. With addSpecial, the post-processor's
// template adds its special tokens (BOS and the like), as Rust's
// encode(text, add_special_tokens) does. Invalid UTF-8 in text is first
// replaced with U+FFFD.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	ids, _ := t.encode(text, addSpecial, -1)
	return ids
}

// EncodeLimit is Encode for a caller that can use at most limit ids, such
// as a prompt that must fit a context. When text has at most limit tokens
// it returns Encode's ids and their count. Otherwise it returns nil and a
// count known to be below the true one but above limit, and it has stopped
// as soon as that was certain: first from the length of text alone
// (MinTokens), then from each stretch of text as it came, so that its work
// and memory follow limit rather than len(text).
func (t *Tokenizer) EncodeLimit(text string, addSpecial bool, limit int) ([]int32, int) {
	return t.encode(text, addSpecial, max(limit, 0))
}

// MinTokens returns a count that Encode's ids reach for every text of n
// bytes, with or without special tokens: n divided by the most bytes of
// input one token can stand for, which Load works out from the vocabulary,
// the added tokens and the normalizer (bound.go). It is 0 for a tokenizer
// with no such bound: one that can drop text, or fold a run of any length
// into one token.
func (t *Tokenizer) MinTokens(n int) int {
	if t.textBytes <= 0 || n <= 0 {
		return 0
	}
	return n / t.textBytes
}

// encode is Encode (limit < 0) and EncodeLimit.
func (t *Tokenizer) encode(text string, addSpecial bool, limit int) ([]int32, int) {
	specials := 0
	if addSpecial {
		specials = t.postIDs
	}
	if limit >= 0 {
		if n := specials + t.MinTokens(len(text)); n > limit {
			return nil, n
		}
	}
	text = validUTF8(text)
	e := t.getEncoder()
	defer t.putEncoder(e)
	size := len(text)/3 + 4
	if limit >= 0 {
		size = min(size, limit+1)
	}
	e.ids, e.limit, e.bound = make([]int32, 0, size), limit, 0
	ok := true
	if !addSpecial {
		ok = t.raw.split(text, true, e.onSegment)
	} else {
		for _, p := range t.post {
			if p.ids == nil {
				ok = t.raw.split(text, true, e.onSegment)
			} else {
				e.ids = append(e.ids, p.ids...)
				ok = e.within()
			}
			if !ok {
				break
			}
		}
	}
	ids := e.ids
	if !ok {
		return nil, max(len(ids), e.bound)
	}
	return ids, len(ids)
}

// segment encodes a piece of the input between added tokens, or an added
// token; it returns false once the limit is passed.
func (e *encoder) segment(seg segment) bool {
	if seg.tok != nil {
		e.ids = append(e.ids, seg.tok.ID)
		return e.within()
	}
	t := e.t
	s := seg.text
	if t.normalizer != nil {
		s = t.normalizer.normalize(s)
	}
	if !e.fits(len(s), t.segBytes) {
		return false
	}
	return t.norm.split(s, seg.first, e.onNormalized)
}

// normalized encodes a piece of normalized text between added tokens, or
// an added token.
func (e *encoder) normalized(seg segment) bool {
	if seg.tok != nil {
		e.ids = append(e.ids, seg.tok.ID)
		return e.within()
	}
	if e.t.pre == nil {
		return e.word(piece{s: seg.text})
	}
	return e.t.pre.preTokenize(piece{s: seg.text, first: seg.first}, e.onWord)
}

// word encodes one pre-tokenized word.
func (e *encoder) word(w piece) bool {
	if !e.fits(len(w.s), e.t.wordBytes) {
		return false
	}
	e.ids = e.t.model.tokenize(e, e.ids, w.s)
	return e.within()
}

// within reports whether the ids so far are within the limit.
func (e *encoder) within() bool { return e.limit < 0 || len(e.ids) <= e.limit }

// fits reports whether n more bytes of text, which give at least one token
// per bytesPer bytes (0: no bound), may still fit the limit; when they
// cannot, it records the count that proves it.
func (e *encoder) fits(n, bytesPer int) bool {
	if e.limit < 0 || bytesPer <= 0 {
		return true
	}
	if c := len(e.ids) + n/bytesPer; c > e.limit {
		e.bound = c
		return false
	}
	return true
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
