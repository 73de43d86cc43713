package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"hearth/engine/tensor"
	"hearth/internal/testmodels"
)

// failingPipe is a Pipeliner over the cpu backend whose failAt-th read
// fails, to take Greedy through its error paths (the gpu backend's reads
// do not fail on demand).
type failingPipe struct {
	tensor.Backend
	reads, failAt int
}

// donePending holds a run's outputs, read when the run was started.
type donePending struct {
	f    *failingPipe
	vals map[tensor.T][]float32
}

func (f *failingPipe) Start(ctx context.Context, g *tensor.Graph, outs ...tensor.T) (tensor.Pending, error) {
	if err := f.Run(ctx, g, outs...); err != nil {
		return nil, err
	}
	p := &donePending{f: f, vals: map[tensor.T][]float32{}}
	for _, o := range outs {
		v := make([]float32, tensor.Elements(g.Shape(o)))
		if err := f.Backend.Read(o, v); err != nil {
			return nil, err
		}
		p.vals[o] = v
	}
	return p, nil
}

func (p *donePending) Read(t tensor.T, dst []float32) error {
	p.f.reads++
	if p.f.reads == p.f.failAt {
		return errors.New("fake read failure")
	}
	copy(dst, p.vals[t])
	return nil
}

// TestGreedyErrors: a read that fails at any step, and a context cancelled
// mid-way, leave the error sticky, and after Close the sequence holds the
// prompt and the tokens returned but the last, so decoding carries on
// correctly: on a sliding-window model, whose caches are rings, and on a
// hybrid one whose DeltaNet layers must rewind a recurrent state.
func TestGreedyErrors(t *testing.T) {
	for _, name := range []string{"gemma2-f32", "qwen3_5-f32"} {
		t.Run(name, func(t *testing.T) { greedyErrors(t, name) })
	}
}

func greedyErrors(t *testing.T, name string) {
	m, err := Load(filepath.Join(testmodels.Root(), name), Options{Backend: "cpu", ChunkTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt := []int32{3, 141, 59, 26, 53, 58, 97, 93, 238, 46, 264}
	ctx := context.Background()
	s0, err := m.NewSequence(64)
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	id, err := s0.ForwardArgmax(ctx, prompt)
	for i := 0; err == nil && i < 10; i++ {
		want = append(want, id)
		id, err = s0.ForwardArgmax(ctx, []int32{id})
	}
	if err != nil {
		t.Fatal(err)
	}
	s0.Close()
	// start decodes the prompt greedily on a new sequence, through fp
	start := func(ctx context.Context, fp *failingPipe) (*Sequence, *Greedy) {
		t.Helper()
		m.backend = fp
		s, err := m.NewSequence(64)
		if err != nil {
			t.Fatal(err)
		}
		gr, err := s.Greedy(ctx, prompt)
		if err != nil {
			t.Fatal(err)
		}
		return s, gr
	}
	for failAt := 1; failAt <= 6; failAt++ {
		fp := &failingPipe{Backend: m.backend, failAt: failAt}
		s, gr := start(ctx, fp)
		var got []int32
		for {
			id, err := gr.Next(true)
			if err != nil {
				if _, err2 := gr.Next(true); err2 == nil {
					t.Fatalf("failAt %d: Next after an error did not fail", failAt)
				}
				break
			}
			got = append(got, id)
		}
		gr.Close()
		m.backend = fp.Backend
		wantLen := len(prompt) + max(len(got)-1, 0)
		if s.Len() != wantLen {
			t.Fatalf("failAt %d: the sequence holds %d tokens after Close, want %d (tokens %v)", failAt, s.Len(), wantLen, got)
		}
		if len(got) > 0 {
			id, err := s.ForwardArgmax(ctx, got[len(got)-1:])
			if err != nil || id != want[len(got)] {
				t.Fatalf("failAt %d: decoding on gives %d, %v (want %d)", failAt, id, err, want[len(got)])
			}
		}
		s.Close()
	}
	// a context cancelled after two tokens
	fp := &failingPipe{Backend: m.backend}
	cctx, cancel := context.WithCancel(ctx)
	s, gr := start(cctx, fp)
	for i := 0; i < 2; i++ {
		if id, err := gr.Next(true); err != nil || id != want[i] {
			t.Fatalf("token %d: %d, %v (want %d)", i, id, err, want[i])
		}
	}
	cancel()
	if _, err := gr.Next(true); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after the context was cancelled: %v", err)
	}
	gr.Close()
	m.backend = fp.Backend
	if s.Len() != len(prompt)+1 {
		t.Fatalf("after a cancel and Close the sequence holds %d tokens, want %d", s.Len(), len(prompt)+1)
	}
	s.Close()
}
