package cache_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/cache"
	"hearth/engine/tensor"
)

// A small recurrent layer: a causal convolution over ch channels and a
// gated delta rule over hv heads, fed by each token's own random inputs.
const ch, kernel, hk, hv, dk, dv = 6, 4, 1, 2, 4, 3

// tokenInputs are one token's inputs, drawn from its id so that the same
// token sequence always feeds the same values.
func tokenInputs(id int) (x, q, k, v, decay, beta []float32) {
	r := rand.New(rand.NewPCG(uint64(id), 7))
	x, q, k, v = randn(r, ch), randn(r, hk*dk), randn(r, hk*dk), randn(r, hv*dv)
	decay, beta = randn(r, hv), randn(r, hv)
	for i := range decay {
		decay[i] = -decay[i] * decay[i] / 2
		beta[i] = 1 / (1 + beta[i]*beta[i])
	}
	return
}

// feed runs one pass over ids on s and returns its outputs (conv, then
// delta rule); with run false it only records the pass.
func feed(t *testing.T, b tensor.Backend, w tensor.T, s *cache.State, ids []int, run bool) []float32 {
	t.Helper()
	var x, q, k, v, decay, beta []float32
	for _, id := range ids {
		x1, q1, k1, v1, d1, b1 := tokenInputs(id)
		x, q, k, v = append(x, x1...), append(q, q1...), append(k, k1...), append(v, v1...)
		decay, beta = append(decay, d1...), append(beta, b1...)
	}
	n := len(ids)
	st, err := s.Advance(n)
	if err != nil {
		t.Fatal(err)
	}
	if !run {
		return nil
	}
	g := tensor.NewGraph(b)
	y := g.CausalConv1d(g.Input(x, n, ch), w, st.ConvIn, st.ConvOut)
	o := g.GatedDeltaRule(g.Input(q, n, hk, dk), g.Input(k, n, hk, dk), g.Input(v, n, hv, dv),
		g.Input(decay, n, hv), g.Input(beta, n, hv), st.RecIn, st.RecOut)
	if err := b.Run(context.Background(), g, y, o); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, n*ch+n*hv*dv)
	if err := b.Read(y, out[:n*ch]); err != nil {
		t.Fatal(err)
	}
	if err := b.Read(o, out[n*ch:]); err != nil {
		t.Fatal(err)
	}
	return out
}

func newState(t *testing.T, b tensor.Backend) *cache.State {
	t.Helper()
	s, err := cache.NewState(b, []int{kernel - 1, ch}, []int{hv, dk, dv}, 2)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func convWeight(t *testing.T, b tensor.Backend) tensor.T {
	t.Helper()
	w, err := b.Upload(tensor.Weight{Name: "conv", DType: tensor.F32, Shape: []int{ch, kernel}, Data: f32bytes(randn(rand.New(rand.NewPCG(1, 2)), ch*kernel))})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func f32bytes(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, f := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	return out
}

// reference feeds the whole sequence to a fresh state, one pass per
// element of passes, and returns the outputs of the last pass.
func reference(t *testing.T, b tensor.Backend, w tensor.T, passes ...[]int) []float32 {
	t.Helper()
	s := newState(t, b)
	defer s.Free()
	var out []float32
	for _, p := range passes {
		out = feed(t, b, w, s, p, true)
	}
	return out
}

// TestStateTrim: Trim undoes the last one or two passes (run or only
// recorded), and the passes after it compute exactly what a fresh state
// fed the kept tokens computes.
func TestStateTrim(t *testing.T) {
	b := cpu.New(cpu.Options{Threads: 2})
	defer b.Close()
	w := convWeight(t, b)
	prompt, next := []int{1, 2, 3, 4, 5}, []int{9}
	for _, tc := range []struct {
		name   string
		extra  [][]int // passes after the prompt, then trimmed away
		record bool    // the last extra pass is recorded, not run
	}{
		{"one pass", [][]int{{6}}, false},
		{"two passes", [][]int{{6}, {7, 8}}, false},
		{"recorded", [][]int{{6}}, true},
		{"run and recorded", [][]int{{6, 7}, {8}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(t, b)
			defer s.Free()
			feed(t, b, w, s, prompt, true)
			dropped := 0
			for i, p := range tc.extra {
				feed(t, b, w, s, p, !(tc.record && i == len(tc.extra)-1))
				dropped += len(p)
			}
			if got := s.Trim(dropped); got != dropped || s.Len() != len(prompt) {
				t.Fatalf("Trim(%d) = %d, length %d; want %d, %d", dropped, got, s.Len(), dropped, len(prompt))
			}
			got := feed(t, b, w, s, next, true)
			if want := reference(t, b, w, prompt, next); !slices.Equal(got, want) {
				t.Fatalf("after Trim: %v\nwant %v", got, want)
			}
		})
	}
}

// TestStateSnapshot: a snapshot survives any number of passes, Rollback
// returns to it, and Release lets its slot be reused.
func TestStateSnapshot(t *testing.T) {
	b := cpu.New(cpu.Options{Threads: 2})
	defer b.Close()
	w := convWeight(t, b)
	s := newState(t, b)
	defer s.Free()
	prompt := []int{1, 2, 3}
	feed(t, b, w, s, prompt, true)
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for id := 10; id < 16; id++ { // more passes than Trim keeps
		feed(t, b, w, s, []int{id}, true)
	}
	if err := s.Rollback(snap); err != nil {
		t.Fatal(err)
	}
	if s.Len() != len(prompt) || snap.Len() != len(prompt) {
		t.Fatalf("after Rollback: length %d, snapshot %d; want %d", s.Len(), snap.Len(), len(prompt))
	}
	got := feed(t, b, w, s, []int{7, 8}, true)
	if want := reference(t, b, w, prompt, []int{7, 8}); !slices.Equal(got, want) {
		t.Fatalf("after Rollback: %v\nwant %v", got, want)
	}
	// a second rollback to the same snapshot works too; released, it fails
	if err := s.Rollback(snap); err != nil {
		t.Fatal(err)
	}
	s.Release(snap)
	if err := s.Rollback(snap); err == nil {
		t.Fatal("Rollback to a released snapshot succeeded")
	}
	// pinning every slot makes Advance grow another, and Trim still works
	var snaps []cache.Snap
	for id := 20; id < 24; id++ {
		feed(t, b, w, s, []int{id}, true)
		p, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, p)
	}
	before := s.Len()
	feed(t, b, w, s, []int{30}, true)
	if s.Trim(1) != 1 || s.Len() != before {
		t.Fatalf("Trim after pinning every slot: length %d, want %d", s.Len(), before)
	}
	for _, p := range snaps {
		s.Release(p)
	}
}

// TestStateLost: a Trim past every kept pass drops the length (so the
// layers of a sequence agree) and makes the next Advance fail.
func TestStateLost(t *testing.T) {
	b := cpu.New(cpu.Options{Threads: 1})
	defer b.Close()
	w := convWeight(t, b)
	s := newState(t, b)
	defer s.Free()
	for id := 1; id < 6; id++ {
		feed(t, b, w, s, []int{id}, true)
	}
	if got := s.Trim(4); got != 4 || s.Len() != 1 {
		t.Fatalf("Trim(4) = %d, length %d; want 4, 1", got, s.Len())
	}
	if _, err := s.Advance(1); !errors.Is(err, cache.ErrStateLost) {
		t.Fatalf("Advance after a lost Trim: %v, want ErrStateLost", err)
	}
	if _, err := s.Snapshot(); !errors.Is(err, cache.ErrStateLost) {
		t.Fatalf("Snapshot after a lost Trim: %v, want ErrStateLost", err)
	}
	g := tensor.NewGraph(b)
	if _, err := s.Update(g, tensor.T{}, tensor.T{}); err == nil {
		t.Fatal("Update on a recurrent state succeeded")
	}
	if _, err := cache.NewState(b, []int{3, 4}, []int{1, 2, 2}, 0); err == nil {
		t.Fatal("NewState with keep 0 succeeded")
	}
	var _ cache.Layer = s
}
