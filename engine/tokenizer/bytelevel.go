package tokenizer

import "unicode/utf8"

// byteChars is GPT-2's bytes_to_unicode table: the printable character that
// stands for each byte in a byte-level vocabulary.
var byteChars = func() (t [256]rune) {
	n := rune(0)
	for b := 0; b < 256; b++ {
		switch {
		case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE && b <= 0xFF:
			t[b] = rune(b)
		default:
			t[b] = 256 + n
			n++
		}
	}
	return t
}()

// charBytes inverts byteChars: 1+byte for each of the 256 characters, 0 for
// any other rune below 512 (all of them are below 512).
var charBytes = func() (t [512]uint16) {
	for b, r := range byteChars {
		t[r] = uint16(b) + 1
	}
	return t
}()

// unByteLevel maps a byte-level token back to raw bytes, appending them to
// dst. ok is false (and dst unchanged) when some character of tok is not one
// of the 256 byte characters.
func unByteLevel(dst []byte, tok string) (out []byte, ok bool) {
	n := len(dst)
	for _, r := range tok {
		if r >= 512 || charBytes[r] == 0 {
			return dst[:n], false
		}
		dst = append(dst, byte(charBytes[r]-1))
	}
	return dst, true
}

// byteLevel maps raw bytes to their byte-level characters.
func byteLevel(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = utf8.AppendRune(dst, byteChars[s[i]])
	}
	return dst
}
