package tokenizer

import "strings"

// Stream turns ids into text as a model generates them. Add returns only
// text that no later id can change, so it never ends inside a UTF-8
// character or inside a run of byte-fallback tokens; the concatenation of
// everything Add and Flush return equals Decode of all the ids.
//
// It decodes a short window: the ids behind the last returned text (for
// context, such as a leading space that a decoder strips only at the start)
// and the ids since. This is the reference's DecodeStream algorithm, plus
// two guards it lacks: byte-fallback runs are held until they end, and the
// context never decodes to nothing. A Stream is not safe for concurrent use.
type Stream struct {
	t      *Tokenizer
	skip   bool
	ids    []int32 // the window
	prefix string  // Decode of ids[:done]
	done   int     // ids of the window whose text was returned
}

// NewStream starts a streaming decode, dropping special tokens when skipSpecial.
func (t *Tokenizer) NewStream(skipSpecial bool) *Stream {
	return &Stream{t: t, skip: skipSpecial}
}

// Add appends id and returns the text that is now final ("" if none).
func (s *Stream) Add(id int32) string {
	s.ids = append(s.ids, id)
	if s.inByteRun() {
		return ""
	}
	text := s.t.Decode(s.ids, s.skip)
	if len(text) <= len(s.prefix) || strings.HasSuffix(text, "\uFFFD") || !strings.HasPrefix(text, s.prefix) {
		return ""
	}
	out := text[len(s.prefix):]
	// The ids just returned become the context of the next window, unless
	// they decode to nothing on their own: a decoder that strips the start
	// (Strip, Metaspace) could then strip into the next ids.
	if next := s.t.Decode(s.ids[s.done:], s.skip); next != "" {
		s.ids = append(s.ids[:0], s.ids[s.done:]...)
		s.prefix = next
	} else {
		s.prefix = text
	}
	s.done = len(s.ids)
	return out
}

// Flush returns the text still held back and resets the stream.
func (s *Stream) Flush() string {
	text := s.t.Decode(s.ids, s.skip)
	out := strings.TrimPrefix(text, s.prefix)
	s.ids, s.prefix, s.done = s.ids[:0], "", 0
	return out
}

// inByteRun reports whether the window ends in a <0xNN> token that a
// ByteFallback decoder would join with later ones: a run of them that is
// not valid UTF-8 becomes one U+FFFD per byte, so none of it is final.
func (s *Stream) inByteRun() bool {
	if !s.t.byteFallback {
		return false
	}
	for i := len(s.ids) - 1; i >= 0; i-- {
		tok, ok := s.t.Token(s.ids[i])
		if !ok || (s.skip && s.t.special[tok]) {
			continue // dropped before decoding: does not end the run
		}
		_, isByte := fallbackByte(tok)
		return isByte
	}
	return false
}
