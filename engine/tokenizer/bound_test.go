package tokenizer

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestShrinkBounds checks shrink's factors for the normalizers that work
// character by character on every rune, and NFC/NFKC's compositions on
// random runs of starters, combining marks and conjoining jamo.
func TestShrinkBounds(t *testing.T) {
	forms := []struct {
		name string
		n    normalizer
	}{
		{"NFC", unicodeNorm{norm.NFC}}, {"NFD", unicodeNorm{norm.NFD}},
		{"NFKC", unicodeNorm{norm.NFKC}}, {"NFKD", unicodeNorm{norm.NFKD}},
		{"Lowercase", lowercase{}},
	}
	for _, f := range forms {
		k := shrink(f.n)
		worst := 0.0
		for r := rune(0); r <= utf8.MaxRune; r++ {
			if !utf8.ValidRune(r) {
				continue
			}
			in := string(r)
			out := f.n.normalize(in)
			if len(out)*k < len(in) {
				t.Fatalf("%s(%U) = %q: %d bytes from %d, more than %d times shorter", f.name, r, out, len(out), len(in), k)
			}
			worst = max(worst, float64(len(in))/float64(len(out)))
		}
		t.Logf("%s: one rune shrinks at most %.2f times (bound %d)", f.name, worst, k)
	}
	// Compositions: several characters into one.
	parts := []rune("aeoAEOuUiIKkαΑωΩsS\u1100\u1112\u1161\u1175\u11a8\u11c2\u0300\u0301\u0302\u0303\u0308\u0313\u0314\u0323\u0345\u0327\u030a\u3131\u314f\uff8a\uff9f\U0001d400\U0001d6c2\u212a\u2126\u00c5\u0041")
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		var sb strings.Builder
		for range 1 + rng.IntN(8) {
			sb.WriteRune(parts[rng.IntN(len(parts))])
		}
		in := sb.String()
		for _, f := range forms[:4] {
			if out := f.n.normalize(in); len(out)*shrink(f.n) < len(in) {
				t.Fatalf("%s(%+q) = %+q: %d bytes from %d", f.name, in, out, len(out), len(in))
			}
		}
	}
}

// boundTexts are texts that come close to the bounds of tk: its longest
// tokens and added tokens end to end, runs of one character, text that
// normalizers shrink, byte fallback, invalid UTF-8, and random mixes.
func boundTexts(tk *Tokenizer, rng *rand.Rand, c *corpus) []string {
	var out []string
	add := func(s string, n int) {
		for len(s) > 0 && len(s) < n {
			s += s
		}
		out = append(out, s)
	}
	// The longest tokens, as the model sees them and as written.
	m := tk.model
	var long []string
	for e := range m.vocab.len() {
		long = append(long, m.vocab.key(uint32(e)))
	}
	sort.Slice(long, func(i, j int) bool { return len(long[i]) > len(long[j]) })
	for _, tok := range long[:min(8, len(long))] {
		add(tok, 2000)
		add(strings.ReplaceAll(tok, "▁", " "), 2000)
		add(" "+tok, 2000)
	}
	var added []string
	for _, a := range tk.added {
		added = append(added, a.Content)
	}
	sort.Slice(added, func(i, j int) bool {
		return len(added[i]) > len(added[j]) || len(added[i]) == len(added[j]) && added[i] < added[j]
	})
	for _, a := range added[:min(8, len(added))] {
		add(a, 2000)
		add(a+" ", 2000)
		add(" \n"+a+"  ", 2000)
	}
	for _, s := range []string{" ", "  \n", "\n", "\t", "\r\n", "\u3000", "\u00a0", "▁", "0", "1234567", "a", "ab ", "é", "e\u0301",
		"\u1100\u1161\u11a8", "\u212a", "\uff21", "\U0001d400", "\U0001d400\u0301", "ﬁ", "İ", "😀", "👩\u200d👩\u200d👧", "日本語", "한국어",
		"\ue000", "\U0010fffd", "\xff", "\xe2\x82", "\xf0\x9f", "<s>", "<|im_start|>", "<0x41>", "<unk>"} {
		add(s, 1+rng.IntN(3000))
	}
	for range 20 {
		out = append(out, randomText(rng, rng.IntN(400)))
		b := make([]byte, rng.IntN(300))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		out = append(out, string(b))
	}
	out = append(out, c.Strings...)
	out = append(out, c.mixedText(rng.Uint32(), 5000))
	return out
}

// TestMinTokensNeverOverestimates checks MinTokens and EncodeLimit on every
// tokenizer: the bound never exceeds the true count, and EncodeLimit gives
// Encode's ids when they fit the limit, else a count over the limit and at
// most the true one.
func TestMinTokensNeverOverestimates(t *testing.T) {
	c := readCorpus(t)
	for _, name := range allTokenizers {
		t.Run(name, func(t *testing.T) {
			tk := loadReal(t, name)
			rng := rand.New(rand.NewPCG(5, 6))
			tightest := 0.0
			for _, s := range boundTexts(tk, rng, c) {
				checkLimits(t, tk, s, rng)
				if n := len(tk.Encode(s, false)); n > 0 {
					tightest = max(tightest, float64(tk.MinTokens(len(s)))/float64(n))
				}
			}
			t.Logf("%d bytes per token at most (word %d, segment %d); MinTokens reaches %.0f%% of a true count", tk.textBytes, tk.wordBytes, tk.segBytes, 100*tightest)
		})
	}
}

// checkLimits checks MinTokens and EncodeLimit for s against Encode.
func checkLimits(t *testing.T, tk *Tokenizer, s string, rng *rand.Rand) {
	t.Helper()
	for _, special := range []bool{false, true} {
		full := tk.Encode(s, special)
		if low := tk.MinTokens(len(s)); low > len(full) {
			t.Fatalf("MinTokens(%d) = %d, but Encode(%.80q, %v) gives %d ids", len(s), low, s, special, len(full))
		}
		limits := []int{0, 1, len(full) - 1, len(full), len(full) + 1, len(full) / 2}
		if len(full) > 0 {
			limits = append(limits, rng.IntN(len(full)))
		}
		for _, limit := range limits {
			ids, n := tk.EncodeLimit(s, special, limit)
			switch {
			case len(full) <= max(limit, 0):
				if n != len(full) || !slices.Equal(ids, full) {
					t.Fatalf("EncodeLimit(%.80q, %v, %d) = %d ids, count %d; Encode gives %d", s, special, limit, len(ids), n, len(full))
				}
			case ids != nil || n <= max(limit, 0) || n > len(full):
				t.Fatalf("EncodeLimit(%.80q, %v, %d) = %d ids, count %d; want none and a count in (%d, %d]", s, special, limit, len(ids), n, limit, len(full))
			}
		}
	}
}

// TestEncodeLimitStopsEarly encodes 4 MB against a limit of 100 tokens with
// every tokenizer, those without a length bound too. What it allocates
// stays under a few copies of the text: a tokenizer without a bound
// normalizes the text between two added tokens whole (syn_norm's four
// normalizers copy it four times), but pre-tokenizes and encodes it only
// until the limit is passed.
func TestEncodeLimitStopsEarly(t *testing.T) {
	c := readCorpus(t)
	text := c.mixedText(9, 4<<20)
	for _, name := range allTokenizers {
		t.Run(name, func(t *testing.T) {
			tk := loadReal(t, name)
			// The length bound rejects the text at once; cut it to just
			// under the bound, or keep it all when there is no bound.
			s := text
			if tk.textBytes > 0 {
				s = s[:min(len(s), 100*tk.textBytes)]
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			ids, n := tk.EncodeLimit(s, false, 100)
			runtime.ReadMemStats(&after)
			if ids != nil || n <= 100 {
				t.Fatalf("EncodeLimit(%d bytes, 100) = %d ids, count %d; want none and a count over 100", len(s), len(ids), n)
			}
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(16*len(s)+1<<20); got > limit {
				t.Errorf("EncodeLimit(%d bytes, 100) allocated %d KB, want under %d KB", len(s), got>>10, limit>>10)
			}
			if ids, n := tk.EncodeLimit(text, false, 100); ids != nil || n <= 100 {
				t.Errorf("EncodeLimit(%d bytes, 100) = %d ids, count %d", len(text), len(ids), n)
			}
		})
	}
}

// TestPooledEncoderDropsBigScratch checks that an encoder goes back to the
// pool without the scratch a long word grew.
func TestPooledEncoderDropsBigScratch(t *testing.T) {
	tk := loadReal(t, "syn_gpt2")
	e := tk.getEncoder()
	e.syms = make([]symbol, 0, 4*maxPooledScratch)
	e.heap = make([]uint64, 0, 4*maxPooledScratch)
	e.buf = make([]byte, 0, 16)
	e.ids = []int32{1}
	tk.putEncoder(e)
	if e.syms != nil || e.heap != nil || e.ids != nil || e.buf == nil {
		t.Errorf("pooled encoder keeps syms %d, heap %d, ids %d, buf %d", cap(e.syms), cap(e.heap), cap(e.ids), cap(e.buf))
	}
}

// TestBoundTable pins which components leave a tokenizer without a length
// bound, on tiny tokenizers.
func TestBoundTable(t *testing.T) {
	const model = `{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"<s>":3,"abab":4},"merges":["a b","ab ab"]}`
	const unkModel = `{"type":"BPE","unk_token":"<s>","vocab":{"a":0,"b":1,"ab":2,"<s>":3,"abab":4},"merges":["a b","ab ab"]}`
	const fuseModel = `{"type":"BPE","unk_token":"<s>","fuse_unk":true,"vocab":{"a":0,"b":1,"ab":2,"<s>":3,"abab":4},"merges":["a b","ab ab"]}`
	tests := []struct {
		name, normalizer, pre, model string
		want                         int // textBytes
	}{
		{"no unk: characters vanish", "null", "null", model, 0},
		{"unk", "null", "null", unkModel, 4 * 2}, // "<s>" is 3 bytes, a character up to 4
		{"fused unk", "null", "null", fuseModel, 0},
		{"NFKC", `{"type":"NFKC"}`, "null", unkModel, 4 * 4 * 2},
		{"Lowercase", `{"type":"Lowercase"}`, "null", unkModel, 3 * 4 * 2},
		{"literal Replace", `{"type":"Replace","pattern":{"String":"abc"},"content":"x"}`, "null", unkModel, 3 * 4 * 2},
		{"Replace with nothing", `{"type":"Replace","pattern":{"String":"a"},"content":""}`, "null", unkModel, 0},
		{"regex Replace", `{"type":"Replace","pattern":{"Regex":"a+"},"content":"a"}`, "null", unkModel, 0},
		{"Strip", `{"type":"Strip","strip_left":true,"strip_right":true}`, "null", unkModel, 0},
		{"Prepend", `{"type":"Prepend","prepend":"xx"}`, "null", unkModel, 4 * 2},
		{"WhitespaceSplit", "null", `{"type":"WhitespaceSplit"}`, unkModel, 0},
		{"Split Removed", "null", `{"type":"Split","pattern":{"String":" "},"behavior":"Removed","invert":false}`, unkModel, 0},
		{"Split Isolated", "null", `{"type":"Split","pattern":{"String":" "},"behavior":"Isolated","invert":false}`, unkModel, 4 * 2},
	}
	for _, tt := range tests {
		tk, err := FromJSON(tiny(tt.normalizer, tt.pre, "null", "null", tt.model), nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if tk.textBytes != tt.want {
			t.Errorf("%s: %d bytes per token at most, want %d", tt.name, tk.textBytes, tt.want)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		for _, s := range []string{"ababab", "a b  ab", "xyz日本", "<s><s>ab", "ABAB abc ABC", strings.Repeat("ab", 100), strings.Repeat(" ", 50)} {
			checkLimits(t, tk, s, rng)
		}
	}
	// An added token that strips whitespace takes in runs of any length.
	strip := strings.Replace(string(tiny("null", "null", "null", "null", unkModel)), `"lstrip":false`, `"lstrip":true`, 1)
	tk, err := FromJSON([]byte(strip), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tk.textBytes != 0 {
		t.Errorf("lstrip added token: %d bytes per token at most, want no bound", tk.textBytes)
	}
}
