package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// bpe is the BPE model of tokenizer.json: a vocabulary, ranked merges, and
// the unknown-token and byte-fallback rules of Hugging Face's models::bpe.
type bpe struct {
	vocab  *strTable  // token → id; raw bytes when byteLevel
	tokens []string   // id → token as written in tokenizer.json ("" = no token)
	merges *pairTable // pairKey(a, b) → rank<<32 | merged id
	// unmapped holds the tokens of a byte-level vocabulary that are not
	// written in the byte alphabet (absent from vocab, for TokenID only).
	unmapped map[string]int32

	byteLevel    bool       // words are raw bytes; the vocabulary is GPT-2 byte-level
	byteIDs      [256]int32 // byteLevel: id of each single byte, -1 if absent
	fallbackIDs  [256]int32 // id of "<0xNN>", -1 if absent
	unk          int32      // -1 when there is no unk_token
	byteFallback bool
	fuseUnk      bool
	ignoreMerges bool
	prefix       *string // continuing_subword_prefix
	suffix       *string // end_of_word_suffix
}

// pairKey packs a merge pair.
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// symbol is one current piece of a word during merging; len 0 marks a
// symbol merged into its left neighbour.
type symbol struct {
	id         int32
	prev, next int32
	len        int32
}

// tokenize appends the ids of word (one pre-tokenized piece) to dst.
func (m *bpe) tokenize(e *encoder, dst []int32, word string) []int32 {
	if word == "" {
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.vocab.get(word); ok {
			return append(dst, id)
		}
	}
	cacheable := len(word) < maxCachedWord
	if cacheable {
		if ids, ok := e.cache[word]; ok {
			return append(dst, ids...)
		}
	}
	n := len(dst)
	dst = m.mergeWord(e, dst, word)
	if cacheable && len(e.cache) < maxCacheEntries {
		// Clone: word may be a slice of a long input the cache would pin.
		e.cache[strings.Clone(word)] = append([]int32(nil), dst[n:]...)
	}
	return dst
}

// Cache limits: words of maxCachedWord bytes or more are never cached, as
// in the reference (MAX_LENGTH 256).
const (
	maxCachedWord   = 256
	maxCacheEntries = 20000
)

// mergeWord splits word into initial symbols and applies the merges.
func (m *bpe) mergeWord(e *encoder, dst []int32, word string) []int32 {
	e.syms = e.syms[:0]
	e.unkID, e.unkLen = -1, 0
	if m.byteLevel {
		for i := 0; i < len(word); i++ {
			if id := m.byteIDs[word[i]]; id >= 0 {
				e.flushUnk()
				e.addSymbol(id, 1)
				continue
			}
			// A byte with no token: handle its character as merge_word does.
			m.unknown(e, string(byteChars[word[i]]), 1)
		}
	} else {
		m.initialSymbols(e, word)
	}
	e.flushUnk()
	syms := e.syms
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	m.mergeAll(e, syms)
	for i := int32(0); i >= 0 && int(i) < len(syms); i = syms[i].next {
		dst = append(dst, syms[i].id)
	}
	return dst
}

// addSymbol appends an initial symbol of n bytes.
func (e *encoder) addSymbol(id int32, n int) {
	i := int32(len(e.syms))
	e.syms = append(e.syms, symbol{id: id, prev: i - 1, next: i + 1, len: int32(n)})
}

// flushUnk adds the pending unk symbol, if any.
func (e *encoder) flushUnk() {
	if e.unkID >= 0 {
		e.addSymbol(e.unkID, e.unkLen)
		e.unkID = -1
	}
}

// initialSymbols is merge_word's first half for character-level words: one
// symbol per character (with the subword prefix and word suffix), byte
// fallback for characters missing from the vocabulary, else unk.
func (m *bpe) initialSymbols(e *encoder, word string) {
	for i := 0; i < len(word); {
		_, size := utf8.DecodeRuneInString(word[i:])
		key := word[i : i+size]
		if m.prefix != nil || m.suffix != nil {
			e.buf = e.buf[:0]
			if i > 0 && m.prefix != nil {
				e.buf = append(e.buf, *m.prefix...)
			}
			e.buf = append(e.buf, key...)
			if i+size == len(word) && m.suffix != nil {
				e.buf = append(e.buf, *m.suffix...)
			}
			key = string(e.buf)
		}
		if id, ok := m.vocab.get(key); ok {
			e.flushUnk()
			e.addSymbol(id, size)
		} else {
			m.unknown(e, key, size)
		}
		i += size
	}
}

// unknown handles a piece missing from the vocabulary: its bytes as <0xNN>
// tokens when byte_fallback has them all (a pending unk stays pending, as in
// the reference), else the unk token, fused with a pending one when fuse_unk.
func (m *bpe) unknown(e *encoder, key string, size int) {
	if m.byteFallback {
		all := true
		for i := 0; i < len(key); i++ {
			if m.fallbackIDs[key[i]] < 0 {
				all = false
				break
			}
		}
		if all {
			for i := 0; i < len(key); i++ {
				e.addSymbol(m.fallbackIDs[key[i]], 1)
			}
			return
		}
	}
	if m.unk < 0 {
		return
	}
	switch {
	case e.unkID >= 0 && m.fuseUnk:
		e.unkLen += size
	case e.unkID >= 0:
		e.addSymbol(e.unkID, e.unkLen)
		e.unkID, e.unkLen = m.unk, size
	default:
		e.unkID, e.unkLen = m.unk, size
	}
}

// mergeAll applies merges lowest rank first (leftmost on ties) with a
// priority queue, as Word::merge_all does: O(n log n) in the word length.
func (m *bpe) mergeAll(e *encoder, syms []symbol) {
	h := e.heap[:0]
	for i := 0; i+1 < len(syms); i++ {
		if v, ok := m.merges.get(pairKey(syms[i].id, syms[i+1].id)); ok {
			h = heapPush(h, v>>32<<32|uint64(i))
		}
	}
	for len(h) > 0 {
		var top uint64
		top, h = heapPop(h)
		rank, pos := uint32(top>>32), int32(uint32(top))
		cur := &syms[pos]
		if cur.len == 0 || cur.next < 0 {
			continue
		}
		ri := cur.next
		right := syms[ri]
		v, ok := m.merges.get(pairKey(cur.id, right.id))
		if !ok || uint32(v>>32) != rank {
			continue // stale entry: the pair changed since it was queued
		}
		cur.id = int32(uint32(v))
		cur.len += right.len
		cur.next = right.next
		syms[ri].len = 0
		if right.next >= 0 {
			syms[right.next].prev = pos
		}
		if cur.prev >= 0 {
			if v, ok := m.merges.get(pairKey(syms[cur.prev].id, cur.id)); ok {
				h = heapPush(h, v>>32<<32|uint64(uint32(cur.prev)))
			}
		}
		if cur.next >= 0 {
			if v, ok := m.merges.get(pairKey(cur.id, syms[cur.next].id)); ok {
				h = heapPush(h, v>>32<<32|uint64(uint32(pos)))
			}
		}
	}
	e.heap = h
}

// heapPush and heapPop keep h a binary min-heap of rank<<32 | position.
func heapPush(h []uint64, v uint64) []uint64 {
	h = append(h, v)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	return h
}

func heapPop(h []uint64) (uint64, []uint64) {
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h[r] < h[l] {
			c = r
		}
		if h[i] <= h[c] {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	return top, h
}

// errMergeToken reports a merge whose parts or result are not in the vocabulary.
func errMergeToken(rank int, tok string) error {
	return fmt.Errorf("merge %d: token %q is not in the vocabulary", rank, tok)
}
