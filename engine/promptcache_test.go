package engine

import (
	"context"
	"slices"
	"testing"

	"hearth/internal/testmodels"
)

// TestPromptCacheReuse: a second prompt that shares a start with a cached
// sequence reads only the rest, and its logits are those of the whole
// prompt computed from scratch, on a plain model, a sliding-window one
// (whose ring limits how far back it can rewind) and a hybrid one (whose
// recurrent state can only resume where the first request ended).
func TestPromptCacheReuse(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"llama-f32", "gemma2-f32", "qwen3_5-f32"} {
		t.Run(name, func(t *testing.T) {
			e, _ := m.Find(name)
			gold, err := e.Golden()
			if err != nil {
				t.Fatal(err)
			}
			model, err := Load(e.Path(), Options{Backend: "cpu", ChunkTokens: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			ctx := context.Background()
			first := gold.PromptIDs
			// Turn two: the first prompt, then more.
			second := append(slices.Clone(first), gold.GreedyIDs...)
			// A prompt that diverges half way.
			third := append(slices.Clone(first[:len(first)/2]), gold.GreedyIDs...)

			want := func(ids []int32) []float32 {
				s, err := model.NewSequence(256)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				out, err := s.Forward(ctx, ids, false)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			pc := &PromptCache{MaxBytes: 1 << 30}
			defer pc.Close()
			s, err := model.NewSequence(256)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Forward(ctx, first, false); err != nil {
				t.Fatal(err)
			}
			pc.Put(s, first)
			for _, next := range [][]int32{second, third} {
				s, n := pc.Take(next, 256, 1)
				if s == nil {
					if name != "llama-f32" && !slices.Equal(next[:len(first)], first) {
						// A recurrent state cannot rewind into the middle,
						// nor a ring past its window.
						continue
					}
					t.Fatalf("no cached sequence for a prompt sharing %d tokens", sharedPrefix(first, next))
				}
				if n != min(sharedPrefix(first, next), len(next)-1) && name != "gemma2-f32" {
					t.Errorf("reused %d tokens, want %d", n, sharedPrefix(first, next))
				}
				got, err := s.Forward(ctx, next[n:], false)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(got, want(next)); d > 1e-4 {
					t.Errorf("reusing %d of %d tokens: logits differ by %g", n, len(next), d)
				}
				pc.Put(s, next)
			}
			if l, h, _ := pc.Stats(); l != 2 || h == 0 {
				t.Errorf("%d lookups, %d hits", l, h)
			}
		})
	}
}

func maxAbsDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		x := float64(a[i] - b[i])
		d = max(d, max(x, -x))
	}
	return d
}

// TestPromptCacheBudget: the cache keeps at most MaxBytes, least recently
// used first out, and frees what it drops.
func TestPromptCacheBudget(t *testing.T) {
	m, _ := testmodels.Load()
	e, _ := m.Find("llama-f32")
	model, err := Load(e.Path(), Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	seqs := make([]*Sequence, 3)
	for i := range seqs {
		if seqs[i], err = model.NewSequence(32); err != nil {
			t.Fatal(err)
		}
		if _, err := seqs[i].Forward(context.Background(), []int32{int32(10 + i), 5, 6}, false); err != nil {
			t.Fatal(err)
		}
	}
	one := seqs[0].bytes()
	pc := &PromptCache{MaxBytes: 2 * one}
	defer pc.Close()
	for i, s := range seqs {
		pc.Put(s, []int32{int32(10 + i), 5, 6})
	}
	if pc.Bytes() != 2*one {
		t.Errorf("%d bytes kept, want %d", pc.Bytes(), 2*one)
	}
	if s, _ := pc.Take([]int32{10, 5, 6, 7}, 32, 1); s != nil {
		t.Error("the oldest sequence is still cached")
	}
	if s, n := pc.Take([]int32{12, 5, 6, 7}, 32, 1); s == nil || n != 3 {
		t.Errorf("newest: %v, %d", s, n)
	} else {
		s.Close()
	}
}
