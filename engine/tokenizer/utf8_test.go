package tokenizer

import (
	"slices"
	"testing"
)

// TestLossyUTF8 pins Rust's String::from_utf8_lossy: one U+FFFD per maximal
// invalid subpart, where Go would give one per byte.
func TestLossyUTF8(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\xe2\x82\xac", "€"},
		{"\xe2\x82", "\ufffd"},
		{"\xe2\x82A", "\ufffdA"},
		{"\xf0\x9f\x98", "\ufffd"},
		{"\xf0\x9f\x98\x80\xf0", "😀\ufffd"},
		{"\xff\xfe", "\ufffd\ufffd"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"}, // surrogate: ED then two lone continuations
		{"\xc0\x80", "\ufffd\ufffd"},
		{"\xe0\x80\x80", "\ufffd\ufffd\ufffd"},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
		{"\x80", "\ufffd"},
		{"a\xc3", "a\ufffd"},
	}
	for _, tt := range tests {
		if got := lossyUTF8([]byte(tt.in)); got != tt.want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDecoders pins decoder steps the goldens reach only in part.
func TestDecoders(t *testing.T) {
	tests := []struct {
		name string
		d    decoder
		in   []string
		want []string
	}{
		{"strip both ends", stripDec{content: ' ', start: 1, stop: 2}, []string{"  a  ", " ", ""}, []string{" a", "", ""}},
		{"byte fallback joins a run", byteFallbackDec{}, []string{"<0xE2>", "<0x82>", "<0xAC>", "x"}, []string{"€", "x"}},
		{"byte fallback bad run", byteFallbackDec{}, []string{"<0xE2>", "<0x82>", "x", "<0x41>"}, []string{"\ufffd", "\ufffd", "x", "A"}},
		{"byte fallback plus sign", byteFallbackDec{}, []string{"<0x+A>", "<0xZZ>"}, []string{"\n", "<0xZZ>"}},
		{"metaspace first token", metaspaceDec{replacement: '▁', scheme: prependAlways}, []string{"▁a▁b", "▁c"}, []string{"ab", " c"}},
		{"metaspace never", metaspaceDec{replacement: '▁', scheme: prependNever}, []string{"▁a", "▁c"}, []string{" a", " c"}},
		{"byte level", byteLevelDec{}, []string{"Ġhi", "Ċ", "日"}, []string{" hi\n日"}},
	}
	for _, tt := range tests {
		if got := tt.d.decodeChain(append([]string(nil), tt.in...)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: decodeChain(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}
