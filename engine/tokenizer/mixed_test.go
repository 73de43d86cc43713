package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpus is testdata/corpus.json: the hard strings of the goldens and the
// pieces of the generated mixed text.
type corpus struct {
	Strings    []string `json:"strings"`
	Fragments  []string `json:"fragments"`
	Separators []string `json:"separators"`
}

func readCorpus(t testing.TB) *corpus {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("corpus.json: %v", err)
	}
	return &c
}

// mixedText is tools/tokgold/mixed.js's generator: fragments and separators
// picked by xorshift32 until the text has nbytes bytes.
func (c *corpus) mixedText(seed uint32, nbytes int) string {
	x := seed
	next := func() uint32 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return x
	}
	var sb strings.Builder
	for sb.Len() < nbytes {
		sb.WriteString(c.Fragments[next()%uint32(len(c.Fragments))])
		sb.WriteString(c.Separators[next()%uint32(len(c.Separators))])
	}
	return sb.String()
}

// sweepText is gold.js's sweepText: each token inside a word and between spaces.
func sweepText(tokens []string) string {
	var sb strings.Builder
	for _, tok := range tokens {
		sb.WriteString("x" + tok + "y " + tok + " ")
	}
	return sb.String()
}
