package tokenizer

import "unicode/utf8"

// lossyUTF8 converts b to a string the way Rust's String::from_utf8_lossy
// does: each maximal invalid prefix of a sequence (one to three bytes)
// becomes one U+FFFD. Go's own conversions differ (one U+FFFD per byte, or
// per run of bad bytes).
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			out = append(out, c)
			i++
			continue
		}
		n := validPrefix(b[i:])
		if n > 0 {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		out = append(out, "\uFFFD"...)
		i += invalidLen(b[i:])
	}
	return string(out)
}

// validPrefix returns the length of the valid multi-byte character at the
// start of b, or 0 when it is not one.
func validPrefix(b []byte) int {
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError && size <= 1 {
		return 0
	}
	return size
}

// invalidLen returns how many bytes at the start of b form one maximal
// invalid subpart (Rust's Utf8Chunks rule).
func invalidLen(b []byte) int {
	cont := func(i int, lo, hi byte) bool { return i < len(b) && b[i] >= lo && b[i] <= hi }
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		return 1
	case c >= 0xE0 && c <= 0xEF:
		lo, hi := byte(0x80), byte(0xBF)
		if c == 0xE0 {
			lo = 0xA0
		} else if c == 0xED {
			hi = 0x9F
		}
		if !cont(1, lo, hi) {
			return 1
		}
		return 2
	case c >= 0xF0 && c <= 0xF4:
		lo, hi := byte(0x80), byte(0xBF)
		if c == 0xF0 {
			lo = 0x90
		} else if c == 0xF4 {
			hi = 0x8F
		}
		if !cont(1, lo, hi) {
			return 1
		}
		if !cont(2, 0x80, 0xBF) {
			return 2
		}
		return 3
	}
	return 1
}

// validUTF8 returns s with invalid sequences replaced as lossyUTF8 does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return lossyUTF8([]byte(s))
}
