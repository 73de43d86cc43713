package sample

import (
	"math"
	"testing"
)

// TestVerifyDistribution checks the rejection rule is lossless: whatever
// the draft, the token Verify returns is distributed as Sample's. The
// seeds are fixed, so the test is deterministic; the bound is the
// chi-square 0.1% critical value, far above what a correct rule gives
// and far below what a biased one does.
func TestVerifyDistribution(t *testing.T) {
	logits := []float32{2.0, 1.6, 1.1, 0.4, -0.3, -2.5}
	opt := Options{Temperature: 0.8, TopP: 0.95}
	// The distribution Sample draws from.
	want := make([]float64, len(logits))
	{
		s := New(opt, nil)
		idx, probs, total := s.candidates(append([]float32(nil), logits...))
		for i, id := range idx {
			want[id] = probs[i] / total
		}
	}
	const trials = 40000
	for _, draft := range []int32{0, 2, 5} {
		counts := make([]float64, len(logits))
		accepted := 0
		for i := range trials {
			seed := uint64(i)*7919 + uint64(draft)
			o := opt
			o.Seed = &seed
			s := New(o, nil)
			id, ok := s.Verify(append([]float32(nil), logits...), draft)
			counts[id]++
			if ok {
				accepted++
				if id != draft {
					t.Fatalf("accepted %d for draft %d", id, draft)
				}
			}
		}
		chi, df := 0.0, -1
		for id, p := range want {
			if p == 0 {
				if counts[id] != 0 {
					t.Errorf("draft %d: token %d (outside top-p) drawn %v times", draft, id, counts[id])
				}
				continue
			}
			e := p * trials
			chi += (counts[id] - e) * (counts[id] - e) / e
			df++
		}
		// 0.1% critical values of chi-square for 1..5 degrees of freedom.
		crit := []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52}[df]
		if chi > crit {
			t.Errorf("draft %d: chi-square %.1f over %d df (critical %.1f): counts %v, want %v", draft, chi, df, crit, counts, want)
		}
		if rate := float64(accepted) / trials; math.Abs(rate-want[draft]) > 0.02 {
			t.Errorf("draft %d accepted %.3f of the time, want p(draft) = %.3f", draft, rate, want[draft])
		}
	}
}

func TestVerifyGreedy(t *testing.T) {
	s := New(Options{Temperature: 0}, nil)
	if id, ok := s.Verify([]float32{0, 3, 1}, 1); id != 1 || !ok {
		t.Errorf("argmax draft: %d %v", id, ok)
	}
	if id, ok := s.Verify([]float32{0, 3, 1}, 2); id != 1 || ok {
		t.Errorf("wrong draft: %d %v", id, ok)
	}
}
