package tokenizer

// Bounds on how many bytes of text one token can stand for, so that a
// caller can tell from a text's length alone that it has more tokens than
// it can use (MinTokens, EncodeLimit) without tokenizing it.
//
// The argument, stage by stage (TestMinTokensNeverOverestimates checks it
// on the real tokenizers):
//
//   - Model. Every byte of a word starts as a symbol: a vocabulary entry
//     at least as long as the bytes it covers, a byte-fallback <0xNN> (six
//     bytes for one), or the unknown token (one character). A merge joins
//     two symbols into the token whose text is theirs end to end. So a
//     token covers at most as many bytes of the word as its own text has,
//     and the longest token bounds them all; an unknown token shorter than
//     the four bytes of a character scales that up. Three things break the
//     argument, and leave no bound: an unknown that fuses a run of any
//     length (fuse_unk) or is dropped (no unk_token) where the vocabulary
//     does not cover every byte, and a continuing_subword_prefix (it is in
//     the token's text but not in the word).
//   - Pre-tokenizer. Splits keep every byte, ByteLevel and Metaspace only
//     add some; a split that removes its matches (Removed, WhitespaceSplit,
//     CharDelimiterSplit) leaves no bound.
//   - Added tokens. One token covers its own text; one with lstrip or
//     rstrip also takes in the whitespace around it, however long, and
//     leaves no bound.
//   - Normalizer. NFC and the like turn one character into at least one
//     byte (a 4-byte character into 1 at worst) or compose a few into one
//     (Hangul: 9 bytes into 3), Lowercase makes a character at most 3
//     times shorter (the Kelvin sign), a literal Replace at most
//     len(pattern)/len(content) (TestShrinkBounds checks every rune).
//     Strip, StripAccents, a Replace with empty content or a regex pattern
//     can remove runs of any length and leave no bound.
//   - Invalid UTF-8 becomes U+FFFD: three bytes for one to three.

// setBounds works out t.wordBytes, t.segBytes and t.textBytes, and
// t.postIDs; it runs once the tokenizer is built.
func (t *Tokenizer) setBounds() {
	for _, p := range t.post {
		t.postIDs += len(p.ids)
	}
	t.wordBytes = t.model.bytesPerToken()
	if t.wordBytes == 0 || !keepsAll(t.pre) || t.norm.strips {
		return
	}
	t.segBytes = max(t.wordBytes, t.norm.maxLen)
	f := shrink(t.normalizer)
	if f == 0 || t.raw.strips {
		return
	}
	t.textBytes = f * max(t.segBytes, t.raw.maxLen)
}

// bytesPerToken returns the most bytes of a word that one token of m can
// stand for, or 0 when there is no such bound.
func (m *bpe) bytesPerToken() int {
	if m.prefix != nil {
		return 0
	}
	longest := 0
	for e := range m.vocab.len() {
		longest = max(longest, len(m.vocab.key(uint32(e))))
	}
	// Tokens outside the byte alphabet are no word's bytes, but a merge
	// could still make one; its text is longer than any bytes it covers.
	for tok := range m.unmapped {
		longest = max(longest, len(tok))
	}
	if longest == 0 || !m.mayUseUnk() {
		return longest
	}
	if m.unk < 0 || m.fuseUnk {
		return 0 // unknown runs vanish or fuse into one token
	}
	if m.byteLevel {
		return longest // an unknown byte: one byte
	}
	// An unknown character covers up to 4 bytes, however short the
	// unknown token's text is.
	u := len(m.tokens[m.unk])
	if u == 0 {
		return 0
	}
	return longest * ((4 + u - 1) / u)
}

// mayUseUnk reports whether some word can have a byte or character that
// neither the vocabulary nor byte fallback covers.
func (m *bpe) mayUseUnk() bool {
	ids := &m.byteIDs
	if !m.byteLevel {
		if !m.byteFallback {
			return true
		}
		ids = &m.fallbackIDs
	}
	for _, id := range ids {
		if id < 0 {
			return true
		}
	}
	return false
}

// keepsAll reports whether pt keeps every byte of its input in its words.
func keepsAll(pt preTokenizer) bool {
	switch pt := pt.(type) {
	case nil, *byteLevelPre, digitsPre, *metaspacePre:
		return true
	case *splitPre:
		return pt.behavior != behaviorRemoved
	case preTokenizerSeq:
		for _, p := range pt {
			if !keepsAll(p) {
				return false
			}
		}
		return true
	}
	return false // WhitespaceSplit and CharDelimiterSplit drop their delimiters
}

// shrink returns how many times fewer bytes n can leave of a text, at
// most, or 0 when it can remove text without bound.
func shrink(n normalizer) int {
	switch n := n.(type) {
	case nil, prepend:
		return 1
	case unicodeNorm:
		return 4
	case lowercase:
		return 3
	case replace:
		lit, ok := n.pat.(literalPattern)
		switch {
		case !ok || (lit != "" && n.content == ""):
			return 0
		case len(lit) <= len(n.content):
			return 1
		}
		return (len(lit) + len(n.content) - 1) / len(n.content)
	case normalizerSeq:
		f := 1
		for _, x := range n {
			g := shrink(x)
			if g == 0 {
				return 0
			}
			f *= g
		}
		return f
	}
	return 0 // Strip, StripAccents
}
