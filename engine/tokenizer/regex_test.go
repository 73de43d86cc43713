package tokenizer

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dlclark/regexp2"
)

// splitPatterns are the Split regexes of the real tokenizers, GPT-2's and a
// few more shapes (lazy, lookahead, groups, escapes).
var splitPatterns = []string{
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	`\p{N}{1,3}`,
	"[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
	"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
	gpt2Pattern,
	`\s+`, `[.,;]`, `[a-z]+?x`, `(?:ab|a)+c`, `(?:a|ab)*?b`, `x(?=y)`, `\d{2,}`, `[^\S\n]+`, `\x41\u00e9[\x{1F600}-\x{1F64F}]`, `.+`, `a{2}|b{1,}`,
}

// fuzzAlphabet mixes the character kinds the patterns tell apart, leaving
// out those where regexp2 (Go's older Unicode tables, no ſ/K case folding)
// differs from the reference on purpose.
var fuzzAlphabet = []rune("aZé日本のーア한'sStTdDmMlLrReEvV 0123456789١²½Ⅻ\t\r\n\v\f\u00a0\u3000\u2028\u0085.,;!?-_/\\\"#$%&()*+<=>@[]^`{|}~’“—€😀🏽\u200d\u0301\u0308İǅʰxyab")

func randomText(r *rand.Rand, n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteRune(fuzzAlphabet[r.IntN(len(fuzzAlphabet))])
	}
	return sb.String()
}

// TestRegexMatchesRegexp2 checks our matcher against regexp2, a separate
// backtracking engine with the same semantics, on random text.
func TestRegexMatchesRegexp2(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, expr := range splitPatterns {
		ours, err := parseRegex(expr)
		if err != nil {
			t.Fatalf("parseRegex(%q): %v", expr, err)
		}
		theirs := &fallbackRegex{re: regexp2.MustCompile(expr, regexp2.None)}
		for i := range 2000 {
			s := randomText(r, i%40)
			if got, want := findAll(ours, nil, s), findAll(theirs, nil, s); !slices.Equal(got, want) {
				t.Fatalf("pattern %q on %q:\n got %v\nwant %v", expr, s, got, want)
			}
		}
	}
}

// TestRegexFallback checks which syntax our matcher leaves to regexp2.
func TestRegexFallback(t *testing.T) {
	tests := []struct {
		expr    string
		ours    bool
		invalid bool // neither engine takes it
	}{
		{`\p{L}+`, true, false},
		{`(?i:abc)|[^\s]`, true, false},
		{`\s+(?!\S)`, true, false},
		{`\bword\b`, false, false},
		{`^start`, false, false},
		{`\w+`, false, false},
		{`(?<=a)b`, false, false},
		{`[[:alpha:]]`, false, false},
		{`\p{Han}`, false, false},
		{`a++`, false, true},
	}
	for _, tt := range tests {
		_, err := parseRegex(tt.expr)
		if ours := err == nil; ours != tt.ours {
			t.Errorf("parseRegex(%q) error = %v, want ours = %v", tt.expr, err, tt.ours)
		}
		if err != nil && !errors.Is(err, errUnsupportedRegex) {
			t.Errorf("parseRegex(%q) error = %v, want errUnsupportedRegex", tt.expr, err)
		}
		if _, err := compilePattern(tt.expr); (err != nil) != tt.invalid {
			t.Errorf("compilePattern(%q) error = %v, want error %v", tt.expr, err, tt.invalid)
		}
	}
}

// TestRegexReference pins behaviour where the reference (Oniguruma, Unicode
// 16) and regexp2 differ, as measured with tokenizers@0.23.2.
func TestRegexReference(t *testing.T) {
	tests := []struct {
		expr, in string
		want     []string
	}{
		{`(?i:'s)|\p{L}+`, "'ſ 'S 's", []string{"'ſ", "'S", "'s"}}, // case folding of s includes U+017F
		{`\p{L}+`, "a\u1c89b", []string{"a\u1c89b"}},               // U+1C89 is a letter since Unicode 16
		{`\p{N}+`, "x\U00010d40y", []string{"\U00010d40"}},         // Garay digit (Unicode 16)
		{`\s+`, "a\u00a0\u200bb", []string{"\u00a0"}},              // U+200B is not a space
	}
	for _, tt := range tests {
		re, err := parseRegex(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range findAll(re, nil, tt.in) {
			got = append(got, tt.in[m.start:m.end])
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q on %q = %q, want %q", tt.expr, tt.in, got, tt.want)
		}
	}
}
