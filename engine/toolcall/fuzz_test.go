package toolcall

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

var fuzzFormats = []Format{Hermes, Llama3, Mistral, Gemma, DeepSeek, None}

func addSeeds(f *testing.F) {
	for i, ft := range fuzzFormats {
		for _, tt := range parseTests {
			if tt.f == ft {
				f.Add(uint8(i), tt.in, []byte{3, 7, 1, 20})
			}
		}
	}
}

// FuzzParse parses arbitrary replies in every format: no panic, any error is
// a *MalformedError, every call has a name and JSON-object arguments, and a
// reply without calls comes back unchanged.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, fi uint8, out string, _ []byte) {
		ft := fuzzFormats[int(fi)%len(fuzzFormats)]
		content, calls, err := Parse(ft, out)
		var me *MalformedError
		if err != nil && !errors.As(err, &me) {
			t.Fatalf("error %v is not a *MalformedError", err)
		}
		for _, c := range calls {
			if c.Name == "" || c.ID == "" {
				t.Fatalf("call %+v lacks a name or an ID", c)
			}
		}
		if len(calls) == 0 && content != out {
			t.Fatalf("no calls, but content %q != reply %q", content, out)
		}
	})
}

// FuzzStream checks that any chunking of a reply gives Parse's content and
// calls, and that no Feed returns content Parse does not.
func FuzzStream(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, fi uint8, out string, cuts []byte) {
		ft := fuzzFormats[int(fi)%len(fuzzFormats)]
		wantContent, wantCalls, wantErr := Parse(ft, out)
		s := NewStream(ft)
		var content string
		var calls []Call
		rest := out
		for _, c := range cuts {
			n := min(int(c), len(rest))
			got, k := s.Feed(rest[:n])
			rest = rest[n:]
			content += got
			calls = append(calls, k...)
			if !strings.HasPrefix(wantContent, content) {
				t.Fatalf("content so far %q is not a prefix of Parse's %q", content, wantContent)
			}
		}
		got, k := s.Feed(rest)
		content += got
		calls = append(calls, k...)
		got, k, err := s.Close()
		content += got
		calls = append(calls, k...)
		if content != wantContent || !reflect.DeepEqual(strip(calls), strip(wantCalls)) {
			t.Fatalf("chunked: %q %q\nParse:   %q %q", content, strip(calls), wantContent, strip(wantCalls))
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("chunked error %v, Parse error %v", err, wantErr)
		}
	})
}
