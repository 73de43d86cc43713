package toolcall

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"strings"
	"unicode"
)

// Stream parses a reply as it is generated. Feed it each piece of text; it
// returns the content that is safe to show and the calls that completed.
// Close ends the reply. A Stream is not safe for concurrent use.
type Stream struct {
	syn       syntax
	buf       buffer  // received text not yet decided
	started   bool    // the first non-space character has been seen
	tail      bool    // the reply began like a bare call: held until Close
	lead      string  // whitespace before a bare reply
	region    *region // an open call region
	afterCall bool    // whitespace now only follows a call: drop it
	sawCall   bool
	ids       idGen
	err       error
	closed    bool
}

// region is a call region whose opening marker has been seen.
type region struct {
	marker  string
	lead    string   // whitespace dropped before the marker, restored if the region is malformed
	scanned int      // bytes searched for the region's end so far
	args    int      // where a Mistral arguments object starts, or -1 before it is found
	json    jsonScan // the scan of that object
}

// buffer holds received text. Appending is amortized and reading it back
// does not copy, so a long call streamed in small pieces costs linear time.
type buffer struct{ b *strings.Builder }

func (b *buffer) String() string {
	if b.b == nil {
		return ""
	}
	return b.b.String()
}

func (b *buffer) add(s string) {
	if b.b == nil {
		b.b = new(strings.Builder)
	}
	b.b.WriteString(s)
}

// set replaces the contents with s (which may alias the old contents).
func (b *buffer) set(s string) {
	b.b = new(strings.Builder)
	b.b.WriteString(s)
}

// NewStream starts parsing a reply in format f. Call IDs are drawn from a
// generator seeded per stream.
func NewStream(f Format) *Stream {
	var seed [16]byte
	_, _ = rand.Read(seed[:])
	return &Stream{
		syn: syntaxes[f],
		ids: idGen{f: f, r: mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))},
	}
}

// Feed adds the next piece of the reply and returns the content that can
// be shown now and the calls completed by it. Text that may begin a call
// marker, and whitespace before it, is held back; so is a reply that
// begins like a bare call (Llama 3's JSON, Gemma's list), until Close.
func (s *Stream) Feed(delta string) (content string, calls []Call) {
	if s.closed {
		return "", nil
	}
	s.buf.add(delta)
	return s.process(false)
}

// Close ends the reply and returns what was held back, the last calls and
// the first *MalformedError met, if any (its text is also in content).
func (s *Stream) Close() (content string, calls []Call, err error) {
	if s.closed {
		return "", nil, s.err
	}
	content, calls = s.process(true)
	s.closed = true
	return content, calls, s.err
}

func isSpace(r rune) bool { return unicode.IsSpace(r) }

func (s *Stream) process(final bool) (string, []Call) {
	var out strings.Builder
	var calls []Call
	emit := func(t string) {
		if s.afterCall {
			if t = strings.TrimLeftFunc(t, isSpace); t == "" {
				return
			}
		}
		s.afterCall = false
		out.WriteString(t)
	}
	took := func(rc []rawCall) {
		for _, c := range rc {
			calls = append(calls, Call{ID: s.ids.next(c.id), Name: c.name, Arguments: c.args})
		}
		s.afterCall, s.sawCall = true, true
	}
	for {
		buf := s.buf.String()
		switch {
		case s.syn == nil:
			emit(buf)
			s.buf.set("")
			return out.String(), calls

		case s.tail:
			if !final {
				return out.String(), calls
			}
			if rc, err := s.syn.parseBare(buf); err == nil {
				took(rc)
			} else {
				emit(s.lead + buf)
			}
			s.buf.set("")
			s.lead, s.tail = "", false
			return out.String(), calls

		case s.region != nil:
			body, n, more := s.syn.regionEnd(s.region, buf, final)
			if more {
				return out.String(), calls
			}
			raw := buf[:n]
			if rc, err := s.syn.parseRegion(s.region.marker, body); err != nil {
				if s.err == nil {
					s.err = &MalformedError{Format: s.syn.format(), Text: s.region.marker + raw, Err: err}
				}
				emit(s.region.lead + s.region.marker + raw)
			} else {
				took(rc)
			}
			s.buf.set(buf[n:])
			s.region = nil

		default:
			if !s.started {
				t := strings.TrimLeftFunc(buf, isSpace)
				if t == "" {
					if final {
						emit(buf)
						s.buf.set("")
					}
					return out.String(), calls
				}
				s.started = true
				if s.syn.bareStart(t[0]) {
					s.tail, s.lead = true, buf[:len(buf)-len(t)]
					s.buf.set(t)
					continue
				}
			}
			if i, m := s.syn.findMarker(buf); i >= 0 {
				text := strings.TrimRightFunc(buf[:i], isSpace)
				emit(text)
				s.region = &region{marker: m, lead: buf[len(text):i], args: -1}
				s.buf.set(buf[i+len(m):])
				continue
			}
			if final {
				if s.sawCall {
					buf = strings.TrimRightFunc(buf, isSpace)
				}
				emit(buf)
				s.buf.set("")
				return out.String(), calls
			}
			// Hold back a possible marker start and the whitespace before it.
			head := buf[:len(buf)-s.syn.partialMarker(buf)]
			text := strings.TrimRightFunc(head, isSpace)
			emit(text)
			s.buf.set(buf[len(text):])
			return out.String(), calls
		}
	}
}

// idGen makes call IDs: "call_" and 24 letters or digits, or, for Mistral,
// whose templates insist on it, 9 letters or digits. An ID the model wrote
// itself is kept.
type idGen struct {
	f Format
	r *mrand.Rand
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func (g idGen) next(given string) string {
	if given != "" {
		return given
	}
	n, prefix := 24, "call_"
	if g.f == Mistral {
		n, prefix = 9, ""
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = idAlphabet[g.r.IntN(len(idAlphabet))]
	}
	return prefix + string(b)
}
