package tokenizer

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// fuzzTarget is a tokenizer under fuzzing and the round trip it promises.
type fuzzTarget struct {
	name string
	tk   *Tokenizer
	// roundTrip: Decode(Encode(s)) == s for valid UTF-8 s (after NFC when nfc).
	roundTrip, nfc bool
}

// fuzzTargets loads the synthetic tokenizers and whichever real ones are
// fetched (fuzzing should not skip for lack of a download).
func fuzzTargets(f *testing.F) []fuzzTarget {
	var out []fuzzTarget
	for _, name := range allTokenizers {
		if _, err := os.Stat(filepath.Join(tokenizerDir(name), "tokenizer.json")); err != nil {
			continue
		}
		tk := loadReal(f, name)
		ft := fuzzTarget{name: name, tk: tk}
		if tk.rawBytes != nil && !addsPrefixSpace(tk.pre) {
			switch n := tk.normalizer.(type) {
			case nil:
				ft.roundTrip = true
			case unicodeNorm:
				ft.roundTrip, ft.nfc = n.form == norm.NFC, true
			}
		}
		out = append(out, ft)
	}
	return out
}

// addsPrefixSpace reports whether a ByteLevel pre-tokenizer adds a space.
func addsPrefixSpace(pt preTokenizer) bool {
	steps := []preTokenizer{pt}
	if q, ok := pt.(preTokenizerSeq); ok {
		steps = q
	}
	for _, s := range steps {
		if b, ok := s.(*byteLevelPre); ok && b.addPrefixSpace {
			return true
		}
	}
	return false
}

// FuzzEncode checks Encode never panics, returns ids in range, that
// byte-level tokenizers without a normalizer (or with NFC) round-trip, and
// that MinTokens and EncodeLimit agree with Encode.
func FuzzEncode(f *testing.F) {
	for _, s := range readCorpus(f).Strings {
		f.Add(s)
	}
	f.Add("\xff\xfe invalid \xe2\x82 utf8")
	targets := fuzzTargets(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, ft := range targets {
			for _, special := range []bool{false, true} {
				for _, id := range ft.tk.Encode(s, special) {
					if id < 0 || int(id) >= ft.tk.VocabSize() {
						t.Fatalf("%s: Encode(%q) gave id %d, vocabulary has %d", ft.name, s, id, ft.tk.VocabSize())
					}
				}
			}
			checkLimits(t, ft.tk, s, rand.New(rand.NewPCG(uint64(len(s)), 1)))
			if !ft.roundTrip || !utf8.ValidString(s) {
				continue
			}
			want := s
			if ft.nfc {
				want = norm.NFC.String(s)
			}
			if got := ft.tk.Decode(ft.tk.Encode(s, false), false); got != want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", ft.name, s, got)
			}
		}
	})
}

// FuzzDecode checks Decode and the stream never panic on arbitrary ids (out
// of range and negative too), give valid UTF-8, and agree.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0, 250, 0, 0, 0})
	f.Add([]byte("ids from text bytes"))
	targets := fuzzTargets(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ft := range targets {
			n := uint32(ft.tk.VocabSize() + 16)
			var ids []int32
			for i := 0; i+4 <= len(data); i += 4 {
				v := binary.LittleEndian.Uint32(data[i:])
				if int32(v) < 0 {
					ids = append(ids, int32(v))
				} else {
					ids = append(ids, int32(v%n)-8)
				}
			}
			for _, skip := range []bool{false, true} {
				want := ft.tk.Decode(ids, skip)
				if !utf8.ValidString(want) {
					t.Fatalf("%s: Decode(%v) = %q: invalid UTF-8", ft.name, ids, want)
				}
				s := ft.tk.NewStream(skip)
				var sb strings.Builder
				for _, id := range ids {
					piece := s.Add(id)
					if !utf8.ValidString(piece) {
						t.Fatalf("%s: stream piece %q: invalid UTF-8", ft.name, piece)
					}
					sb.WriteString(piece)
				}
				sb.WriteString(s.Flush())
				if sb.String() != want {
					t.Fatalf("%s: stream of %v = %q, Decode = %q", ft.name, ids, sb.String(), want)
				}
			}
		}
	})
}
