package reasoning

import (
	"strings"
	"testing"
	"unicode"
)

func addSeeds(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.prefilled, tt.in, []byte{3, 7, 1, 20})
	}
}

// FuzzStream checks that any chunking of a reply gives Parse's thinking
// and content, that each Feed returns a prefix of them, and that a reply
// the tags do not open is all content, unchanged.
func FuzzStream(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, prefilled bool, reply string, cuts []byte) {
		wantT, wantC := Parse(Think, prefilled, reply)
		s := NewStream(Think, prefilled)
		var th, c string
		rest := reply
		for _, n := range cuts {
			n := min(int(n), len(rest))
			a, b := s.Feed(rest[:n])
			rest = rest[n:]
			th, c = th+a, c+b
			if !strings.HasPrefix(wantT, th) || !strings.HasPrefix(wantC, c) {
				t.Fatalf("so far %q, %q is not a prefix of Parse's %q, %q", th, c, wantT, wantC)
			}
		}
		a, b := s.Feed(rest)
		th, c = th+a, c+b
		a, b = s.Close()
		th, c = th+a, c+b
		if th != wantT || c != wantC {
			t.Fatalf("chunked: %q, %q\nParse:   %q, %q", th, c, wantT, wantC)
		}
		if !prefilled && !strings.HasPrefix(strings.TrimLeftFunc(reply, unicode.IsSpace), Think.Open) && (th != "" || c != reply) {
			t.Fatalf("a reply without the open tag split into %q, %q", th, c)
		}
		if len(th)+len(c) > len(reply) {
			t.Fatalf("%d bytes out of a %d-byte reply", len(th)+len(c), len(reply))
		}
	})
}
