package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// streamAll feeds ids one by one and returns what the stream gave; it fails
// t on invalid UTF-8 in any piece.
func streamAll(t *testing.T, tk *Tokenizer, ids []int32, skip bool) string {
	t.Helper()
	s := tk.NewStream(skip)
	var sb strings.Builder
	for i, id := range ids {
		piece := s.Add(id)
		if !utf8.ValidString(piece) {
			t.Fatalf("Add(ids[%d]=%d) = %q: invalid UTF-8", i, id, piece)
		}
		sb.WriteString(piece)
	}
	tail := s.Flush()
	if !utf8.ValidString(tail) {
		t.Fatalf("Flush() = %q: invalid UTF-8", tail)
	}
	sb.WriteString(tail)
	return sb.String()
}

// TestStreamGolden streams every golden id sequence (and the mixed text) and
// checks the pieces join to the one-shot Decode.
func TestStreamGolden(t *testing.T) {
	c := readCorpus(t)
	for _, name := range allTokenizers {
		t.Run(name, func(t *testing.T) {
			tk := loadReal(t, name)
			g := readGolden(t, name)
			seqs := [][]int32{tk.Encode(c.mixedText(g.Mixed.Seed, g.Mixed.Bytes), true)}
			for _, tc := range g.Cases {
				seqs = append(seqs, tc.IDsSpecial)
			}
			for _, ids := range seqs {
				for _, skip := range []bool{false, true} {
					if got, want := streamAll(t, tk, ids, skip), tk.Decode(ids, skip); got != want {
						t.Errorf("streamed %v (skip %v):\n got %q\nwant %q", ids[:min(len(ids), 20)], skip, got, want)
					}
				}
			}
		})
	}
}

// TestStreamRandom streams random ids, including byte-fallback tokens,
// special tokens and ids out of range, and checks the same invariant.
func TestStreamRandom(t *testing.T) {
	for _, name := range allTokenizers {
		t.Run(name, func(t *testing.T) {
			tk := loadReal(t, name)
			r := rand.New(rand.NewPCG(1, uint64(len(name))))
			var interesting []int32 // byte tokens, specials, spaces, a few words
			for id := int32(0); id < int32(tk.VocabSize()); id++ {
				tok, _ := tk.Token(id)
				if _, ok := fallbackByte(tok); ok || tk.IsSpecial(id) || r.IntN(2000) == 0 {
					interesting = append(interesting, id)
				}
			}
			for _, s := range []string{" ", "  ", "\n", " a", "a ", " from", "▁", "日本", "😀"} {
				interesting = append(interesting, tk.Encode(s, false)...)
			}
			for range 300 {
				ids := make([]int32, r.IntN(40))
				for i := range ids {
					switch r.IntN(10) {
					case 0:
						ids[i] = int32(r.IntN(tk.VocabSize()+10)) - 5
					case 1, 2, 3:
						ids[i] = int32(r.IntN(tk.VocabSize()))
					default:
						ids[i] = interesting[r.IntN(len(interesting))]
					}
				}
				for _, skip := range []bool{false, true} {
					if got, want := streamAll(t, tk, ids, skip), tk.Decode(ids, skip); got != want {
						t.Fatalf("streamed %v (skip %v):\n got %q\nwant %q", ids, skip, got, want)
					}
				}
			}
		})
	}
}

// TestStreamHoldsPartial checks that a character split over byte-fallback
// tokens comes out whole, once the run is over.
func TestStreamHoldsPartial(t *testing.T) {
	tk := loadReal(t, "llama2")
	ids := tk.Encode("𝔘 ok", false) // "▁", <0xF0> <0x9D> <0x94> <0x98>, "▁ok"
	if len(ids) != 6 {
		t.Fatalf("Encode = %v, want 6 ids (byte fallback)", ids)
	}
	s := tk.NewStream(false)
	var got []string
	for _, id := range ids {
		got = append(got, s.Add(id))
	}
	got = append(got, s.Flush())
	want := []string{"", "", "", "", "", "𝔘 ok", ""} // Strip drops the leading space
	if !slices.Equal(got, want) {
		t.Fatalf("stream gave %q, want %q", got, want)
	}
}
