package tokenizer

// TokenBytes returns the bytes token id adds to a text in the middle of
// a generation (not at its start, where a decoder may strip a leading
// space): what a grammar must read when the model picks id. Special
// tokens and ids that name no token have none (ok false).
func (t *Tokenizer) TokenBytes(id int32) (b []byte, ok bool) {
	tok, ok := t.Token(id)
	if !ok || t.special[tok] {
		return nil, false
	}
	if t.rawBytes != nil {
		return []byte(t.rawBytes[id]), true
	}
	if x, isByte := fallbackByte(tok); isByte && t.byteFallback {
		return []byte{x}, true
	}
	if t.decoder == nil {
		return []byte(tok), true
	}
	// Decode it after an anchor token, and take what it added: decoders
	// that treat the first token apart (Metaspace, Strip) then see it
	// mid-text.
	anchor, hasAnchor := t.anchor()
	if !hasAnchor {
		return []byte(t.Decode([]int32{id}, false)), true
	}
	before := t.Decode([]int32{anchor}, false)
	after := t.Decode([]int32{anchor, id}, false)
	if len(after) < len(before) || after[:len(before)] != before {
		return []byte(t.Decode([]int32{id}, false)), true
	}
	return []byte(after[len(before):]), true
}

// anchor is a plain token ("a", else "x") for TokenBytes to decode after.
func (t *Tokenizer) anchor() (int32, bool) {
	for _, s := range []string{"a", "x", "0"} {
		if id, ok := t.TokenID(s); ok && !t.special[s] {
			return id, true
		}
	}
	return 0, false
}
