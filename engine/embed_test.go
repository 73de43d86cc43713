package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

// maxAbsEmbed is the f32 tolerance on an embedding against the golden.
const maxAbsEmbed = 1e-5

func openEmbed(t *testing.T, dir, backend string, chunk int) *engine.Runner {
	t.Helper()
	r, err := engine.Open(dir, engine.RunnerOptions{Options: engine.Options{Backend: backend, Threads: 1, ChunkTokens: chunk}})
	if backend == "gpu" {
		testenv.Need(t, "a gpu backend", err == nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func worstDiff(t *testing.T, what string, got, want []float32) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	worst := 0.0
	for i := range got {
		worst = max(worst, math.Abs(float64(got[i]-want[i])))
	}
	if worst > maxAbsEmbed {
		t.Errorf("%s: max |diff| %.3g > %g", what, worst, maxAbsEmbed)
	}
	return worst
}

// TestEmbedGolden pools the golden inputs on the cpu and gpu backends, in
// one pass and in chunks of 4 tokens, last-token and mean, and compares
// them with transformers' Qwen3Model pooled as sentence-transformers does.
func TestEmbedGolden(t *testing.T) {
	g := testmodels.LoadEmbedGolden(t)
	for _, backend := range []string{"cpu", "gpu"} {
		for _, chunk := range []int{0, 4} {
			for _, pooling := range []string{"lasttoken", "mean_tokens"} {
				t.Run(fmt.Sprintf("%s/%s/chunk%d", backend, pooling, chunk), func(t *testing.T) {
					r := openEmbed(t, testmodels.EmbedDir(t, pooling), backend, chunk)
					if !slices.Contains(r.Info().Capabilities, "embeddings") {
						t.Fatalf("capabilities %v lack embeddings", r.Info().Capabilities)
					}
					var ids [][]int32
					total := 0
					for _, c := range g.Cases {
						ids = append(ids, c.InputIDs)
						total += len(c.InputIDs)
					}
					res, err := r.Embed(context.Background(), engine.EmbedRequest{IDs: ids})
					if err != nil {
						t.Fatal(err)
					}
					if res.PromptTokens != total || len(res.Embeddings) != len(g.Cases) {
						t.Fatalf("%d tokens, %d vectors; want %d, %d", res.PromptTokens, len(res.Embeddings), total, len(g.Cases))
					}
					worst := 0.0
					for i, c := range g.Cases {
						want := c.LastToken
						if pooling == "mean_tokens" {
							want = c.Mean
						}
						worst = max(worst, worstDiff(t, fmt.Sprint("input ", i), res.Embeddings[i], want))
					}
					if pooling == "lasttoken" {
						c := g.Cases[len(g.Cases)-2]
						cut, err := r.Embed(context.Background(), engine.EmbedRequest{IDs: [][]int32{c.InputIDs}, Dimensions: c.Dims})
						if err != nil {
							t.Fatal(err)
						}
						worst = max(worst, worstDiff(t, "dimensions", cut.Embeddings[0], c.Cut))
					}
					t.Logf("max |diff| %.3g", worst)
				})
			}
		}
	}
}

// TestSequenceHidden checks the final hidden states themselves, every
// token's, against the golden's last_hidden_state.
func TestSequenceHidden(t *testing.T) {
	g := testmodels.LoadEmbedGolden(t)
	m, err := engine.Load(testmodels.EmbedDir(t, "lasttoken"), engine.Options{Backend: "cpu", Threads: 1, ChunkTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, c := range g.Cases {
		s, err := m.NewSequence(len(c.InputIDs))
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.Hidden(context.Background(), c.InputIDs)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		worstDiff(t, "last_hidden_state", h, c.Hidden)
	}
}

// TestEmbedText: a text is tokenized with the tokenizer's post-processor
// (Qwen3-Embedding's appends <|endoftext|>) and embeds as its ids do.
func TestEmbedText(t *testing.T) {
	r := openEmbed(t, testmodels.EmbedDir(t, "lasttoken"), "cpu", 0)
	ids := r.Tokenizer().Encode("hello world", true)
	if len(ids) < 2 || ids[len(ids)-1] != 509 {
		t.Fatalf("ids %v do not end in <|endoftext|> (509)", ids)
	}
	a, err := r.Embed(context.Background(), engine.EmbedRequest{Texts: []string{"hello world", "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Embed(context.Background(), engine.EmbedRequest{IDs: [][]int32{ids}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Embeddings[0], b.Embeddings[0]) || a.PromptTokens != len(ids)+len(r.Tokenizer().Encode("hi", true)) {
		t.Errorf("text and ids differ (%d tokens)", a.PromptTokens)
	}
	if slices.Equal(a.Embeddings[0], a.Embeddings[1]) {
		t.Error("two texts, one vector")
	}
}

func TestEmbedErrors(t *testing.T) {
	dir := testmodels.EmbedDir(t, "lasttoken")
	r := openEmbed(t, dir, "cpu", 0)
	long := make([]int32, 257)
	many := make([][]int32, engine.MaxEmbedInputs+1)
	for i := range many {
		many[i] = []int32{1}
	}
	for _, tc := range []struct {
		name  string
		req   engine.EmbedRequest
		index int // -1: not an input's fault
		want  string
	}{
		{"empty", engine.EmbedRequest{}, -1, "no inputs"},
		{"too many", engine.EmbedRequest{IDs: many}, -1, "at most 256"},
		{"long", engine.EmbedRequest{IDs: [][]int32{{1}, long}}, 1, "257 tokens exceed the model's context of 256"},
		{"long text", engine.EmbedRequest{Texts: []string{strings.Repeat("hello ", 400)}}, 0, "exceed the model's context of 256"},
		{"vocab", engine.EmbedRequest{IDs: [][]int32{{1}, {2}, {512}}}, 2, "outside the vocabulary"},
		{"no tokens", engine.EmbedRequest{IDs: [][]int32{{}}}, 0, "no tokens"},
		{"dimensions", engine.EmbedRequest{IDs: [][]int32{{1}}, Dimensions: 65}, -1, "outside [1, 64]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Embed(context.Background(), tc.req)
			var ie *engine.InputError
			var re *engine.RequestError
			switch {
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("err %v, want %q", err, tc.want)
			case tc.index >= 0 && (!errors.As(err, &ie) || ie.Index != tc.index):
				t.Errorf("err %v: not input %d's", err, tc.index)
			case tc.index < 0 && !errors.As(err, &re):
				t.Errorf("err %T %v is not a RequestError", err, err)
			}
		})
	}
	// Truncate keeps the first context-many tokens.
	long[255] = 7
	a, err := r.Embed(context.Background(), engine.EmbedRequest{IDs: [][]int32{long}, Truncate: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Embed(context.Background(), engine.EmbedRequest{IDs: [][]int32{long[:256]}})
	if err != nil || a.PromptTokens != 256 || !slices.Equal(a.Embeddings[0], b.Embeddings[0]) {
		t.Errorf("truncated: %d tokens, err %v", a.PromptTokens, err)
	}

	// Without a model card that declares Matryoshka, dimensions is refused.
	os.Remove(filepath.Join(dir, "README.md"))
	r2 := openEmbed(t, dir, "cpu", 0)
	if _, err := r2.Embed(context.Background(), engine.EmbedRequest{IDs: [][]int32{{1}}, Dimensions: 8}); err == nil || !strings.Contains(err.Error(), "Matryoshka") {
		t.Errorf("dimensions without Matryoshka: %v", err)
	}
	// A model without the sentence-transformers files has no embeddings.
	tiny := openEmbed(t, filepath.Join(testmodels.Root(), "chat-tiny"), "cpu", 0)
	if slices.Contains(tiny.Info().Capabilities, "embeddings") {
		t.Error("chat-tiny lists embeddings")
	}
	var re *engine.RequestError
	if _, err := tiny.Embed(context.Background(), engine.EmbedRequest{Texts: []string{"hi"}}); !errors.As(err, &re) || !strings.Contains(err.Error(), `model "chat-tiny" does not support embeddings`) {
		t.Errorf("chat-tiny: %v", err)
	}
	// A Pooling module Hearth does not do is named.
	os.WriteFile(filepath.Join(dir, "1_Pooling", "config.json"), []byte(`{"pooling_mode_cls_token": true}`), 0o644)
	r3 := openEmbed(t, dir, "cpu", 0)
	if _, err := r3.Embed(context.Background(), engine.EmbedRequest{IDs: [][]int32{{1}}}); err == nil || !strings.Contains(err.Error(), "pooling_mode_cls_token is not supported") {
		t.Errorf("cls pooling: %v", err)
	}
}
