package grammar

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"hearth/engine/tokenizer"
	"hearth/internal/testenv"
)

var (
	vocabOnce sync.Once
	qwenVocab *Vocab
	qwenTok   *tokenizer.Tokenizer
)

// realVocab is the Qwen3 tokenizer's 151k tokens (fetched by
// tools/fetch-tokenizers.sh), the vocabulary size the mask must be fast for.
func realVocab(t testing.TB) (*Vocab, *tokenizer.Tokenizer) {
	t.Helper()
	dir := filepath.Join("..", "..", ".cache", "tokenizers", "qwen3")
	_, err := os.Stat(filepath.Join(dir, "tokenizer.json"))
	testenv.Need(t, dir+"/tokenizer.json (run tools/fetch-tokenizers.sh)", err == nil)
	vocabOnce.Do(func() {
		tk, err := tokenizer.Load(dir)
		if err != nil {
			panic(err)
		}
		qwenTok, qwenVocab = tk, VocabOf(tk)
	})
	return qwenVocab, qwenTok
}

// TestMaskMatchesAdvance checks the trie walk against the definition: at
// points along a text, a token is in the mask exactly when the matcher can
// read its bytes.
func TestMaskMatchesAdvance(t *testing.T) {
	v, tk := realVocab(t)
	g, err := Schema([]byte(`{"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer", "minimum": 1, "maximum": 300}, "xs": {"type": "array", "items": {"enum": ["red", "green"]}}}, "required": ["name"]}`))
	if err != nil {
		t.Fatal(err)
	}
	text := `{"name": "Ann \"B\" 日本", "n": 250, "xs": ["red", "green"]}`
	allowed := make([]uint64, (v.Size()+63)/64)
	m := NewMatcher(g)
	for i := 0; i <= len(text); i += 3 {
		if i > 0 {
			if err := m.Advance([]byte(text[i-3 : min(i, len(text))])); err != nil {
				t.Fatal(err)
			}
		}
		m.Mask(v, allowed)
		n := 0
		for id := range v.Size() {
			b, ok := tk.TokenBytes(int32(id))
			if !ok || tk.IsSpecial(int32(id)) {
				b = nil
			}
			save := m.cur
			want := len(b) > 0 && m.Advance(b) == nil
			m.cur = save
			got := allowed[id>>6]&(1<<(id&63)) != 0
			if got != want {
				t.Fatalf("after %q: token %d %q: mask %v, Advance %v", text[:i], id, b, got, want)
			}
			if got {
				n++
			}
		}
		if n == 0 && !m.CanEnd() {
			t.Fatalf("after %q: nothing allowed", text[:i])
		}
	}
}

// TestMaskedGeneration picks tokens among those the mask allows, the
// longest first (a model's way to stress token boundaries), and checks the
// text it ends with is JSON of the schema's shape.
func TestMaskedGeneration(t *testing.T) {
	v, tk := realVocab(t)
	g, err := Schema([]byte(`{"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}, "temps": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 4}, "ok": {"type": "boolean"}}, "required": ["city", "temps", "ok"]}`))
	if err != nil {
		t.Fatal(err)
	}
	allowed := make([]uint64, (v.Size()+63)/64)
	m := NewMatcher(g)
	var text strings.Builder
	for step := 0; step < 200; step++ {
		canEnd := m.Mask(v, allowed)
		best, bestLen := int32(-1), 0
		for id := range v.Size() {
			if allowed[id>>6]&(1<<(id&63)) == 0 {
				continue
			}
			b, _ := tk.TokenBytes(int32(id))
			// Prefer long tokens, but not whitespace runs, so the text
			// moves on.
			if l := len(strings.TrimSpace(string(b))); l > bestLen {
				best, bestLen = int32(id), l
			}
		}
		if best < 0 {
			if !canEnd {
				t.Fatalf("stuck after %q", text.String())
			}
			break
		}
		b, _ := tk.TokenBytes(best)
		if err := m.Advance(b); err != nil {
			t.Fatal(err)
		}
		text.Write(b)
	}
	var out struct {
		City  string    `json:"city"`
		Temps []float64 `json:"temps"`
		OK    *bool     `json:"ok"`
	}
	if !m.CanEnd() || json.Unmarshal([]byte(text.String()), &out) != nil || len(out.Temps) < 2 || out.OK == nil {
		t.Fatalf("generated %q (can end: %v)", text.String(), m.CanEnd())
	}
}

// BenchmarkMask measures one mask over the 151k-token vocabulary at the
// points a JSON generation spends its time: the start of a value, inside
// a string, inside a number, between members.
func BenchmarkMask(b *testing.B) {
	v, _ := realVocab(b)
	g, err := Schema([]byte(`{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name", "age", "tags"]}`))
	if err != nil {
		b.Fatal(err)
	}
	allowed := make([]uint64, (v.Size()+63)/64)
	for _, at := range []struct{ name, prefix string }{
		{"start", ``},
		{"string", `{"name": "Jo`},
		{"number", `{"name": "Jo", "age": 4`},
		{"member", `{"name": "Jo", "age": 42, "tags": ["a"`},
	} {
		b.Run(at.name, func(b *testing.B) {
			m := NewMatcher(g)
			if err := m.Advance([]byte(at.prefix)); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				m.Mask(v, allowed)
			}
		})
	}
}

// TestStringStateCached checks the design that makes the mask cheap
// inside a string: nearly every token's verdict there is cached, and only
// the few that read past the closing quote are checked per step.
func TestStringStateCached(t *testing.T) {
	v, _ := realVocab(t)
	g, err := Schema([]byte(`{"type": "object", "properties": {"name": {"type": "string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := NewMatcher(g)
	if err := m.Advance([]byte(`{"name": "Jo`)); err != nil {
		t.Fatal(err)
	}
	c := g.cache(v)
	certain, unsure := 0, 0
	for _, cfg := range m.cur.cs {
		sm := c.get(g, v, cfg.state)
		for _, x := range sm.dense {
			certain += popcount(x)
		}
		certain += len(sm.sparse)
		unsure += len(sm.unsure)
	}
	if certain < v.Size()/2 || unsure > v.Size()/50 {
		t.Errorf("inside a string: %d tokens cached as allowed, %d checked per step, of %d", certain, unsure, v.Size())
	}
}
