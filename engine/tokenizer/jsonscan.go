package tokenizer

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON scanner for the big parts of tokenizer.json (the vocabulary
// and the merges, tens of megabytes for Gemma): encoding/json would spend
// most of a second on them. Small parts still go through encoding/json.

var errJSONSyntax = errors.New("invalid JSON")

// jsonScanner reads one JSON document from b.
type jsonScanner struct {
	b   []byte
	pos int
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", errJSONSyntax, s.pos, fmt.Sprintf(format, args...))
}

func (s *jsonScanner) skipSpace() {
	b, i := s.b, s.pos
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	s.pos = i
}

// expect consumes c (after whitespace).
func (s *jsonScanner) expect(c byte) error {
	s.skipSpace()
	if s.pos >= len(s.b) || s.b[s.pos] != c {
		return s.errorf("want %q", c)
	}
	s.pos++
	return nil
}

// peek returns the next non-space byte (0 at the end).
func (s *jsonScanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.b) {
		return 0
	}
	return s.b[s.pos]
}

// str reads a string and appends its unescaped bytes to dst.
func (s *jsonScanner) str(dst []byte) ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return dst, err
	}
	for {
		start := s.pos
		for s.pos < len(s.b) && s.b[s.pos] != '"' && s.b[s.pos] != '\\' && s.b[s.pos] >= 0x20 {
			s.pos++
		}
		dst = append(dst, s.b[start:s.pos]...)
		if s.pos >= len(s.b) {
			return dst, s.errorf("unterminated string")
		}
		c := s.b[s.pos]
		s.pos++
		switch c {
		case '"':
			return dst, nil
		case '\\':
		default:
			return dst, s.errorf("control character in string")
		}
		if s.pos >= len(s.b) {
			return dst, s.errorf("unterminated escape")
		}
		c = s.b[s.pos]
		s.pos++
		switch c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, err := s.hex4()
			if err != nil {
				return dst, err
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.pos+1 < len(s.b) && s.b[s.pos] == '\\' && s.b[s.pos+1] == 'u' {
					save := s.pos
					s.pos += 2
					if r2, err = s.hex4(); err != nil {
						return dst, err
					}
					if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
						s.pos = save
					}
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, s.errorf("bad escape \\%c", c)
		}
	}
}

func (s *jsonScanner) hex4() (rune, error) {
	if s.pos+4 > len(s.b) {
		return 0, s.errorf("short \\u escape")
	}
	v, err := strconv.ParseUint(string(s.b[s.pos:s.pos+4]), 16, 16)
	if err != nil {
		return 0, s.errorf("bad \\u escape")
	}
	s.pos += 4
	return rune(v), nil
}

// int reads an integer.
func (s *jsonScanner) int() (int64, error) {
	s.skipSpace()
	start := s.pos
	if s.pos < len(s.b) && s.b[s.pos] == '-' {
		s.pos++
	}
	for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
		s.pos++
	}
	v, err := strconv.ParseInt(string(s.b[start:s.pos]), 10, 64)
	if err != nil {
		return 0, s.errorf("want an integer")
	}
	return v, nil
}

// skip passes over one value of any kind and returns its bytes. It checks
// nesting but not every detail of the grammar; the parts we read are parsed
// properly later.
func (s *jsonScanner) skip() ([]byte, error) {
	s.skipSpace()
	b := s.b
	start := s.pos
	depth := 0
	for s.pos < len(b) {
		c := b[s.pos]
		if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
			s.pos++
			continue
		}
		switch c {
		case '"':
			if err := s.skipString(); err != nil {
				return nil, err
			}
		case '{', '[':
			depth++
			s.pos++
		case '}', ']':
			if depth == 0 {
				return nil, s.errorf("unexpected %q", c)
			}
			depth--
			s.pos++
		case ',', ':':
			if depth == 0 {
				return nil, s.errorf("unexpected %q", c)
			}
			s.pos++
		default: // number, true, false, null
			for s.pos < len(b) && !isJSONDelim(b[s.pos]) {
				s.pos++
			}
		}
		if depth == 0 {
			if s.pos == start {
				return nil, s.errorf("want a value")
			}
			return b[start:s.pos], nil
		}
	}
	return nil, s.errorf("unterminated value")
}

// skipString passes over a string, finding its closing quote with
// bytes.IndexByte.
func (s *jsonScanner) skipString() error {
	s.pos++ // opening quote
	for {
		j := bytes.IndexByte(s.b[s.pos:], '"')
		if j < 0 {
			s.pos = len(s.b)
			return s.errorf("unterminated string")
		}
		s.pos += j + 1
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for k := s.pos - 2; k >= 0 && s.b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return nil
		}
	}
}

func isJSONDelim(c byte) bool {
	switch c {
	case ',', ':', '{', '}', '[', ']', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// object calls f for each key of an object; f must consume the value.
func (s *jsonScanner) object(f func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	var key []byte
	for {
		var err error
		if key, err = s.str(key[:0]); err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := f(string(key)); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or '}'")
		}
	}
}

// array calls f for each element of an array; f must consume the element.
func (s *jsonScanner) array(f func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := f(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or ']'")
		}
	}
}

// rawObject splits an object into its members' raw values.
func rawObject(b []byte) (map[string][]byte, error) {
	s := &jsonScanner{b: b}
	out := map[string][]byte{}
	err := s.object(func(key string) error {
		v, err := s.skip()
		out[key] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.peek() != 0 {
		return nil, s.errorf("data after the top-level value")
	}
	return out, nil
}

// isNull reports whether a raw value is absent or null.
func isNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }
