package testmodels

import (
	"math"
	"testing"
)

// CheckStep holds one decode step's logits to the golden's: it fails t at
// the first logit further than tol from want (or at a length mismatch) and
// returns the largest difference.
func CheckStep(t testing.TB, step int, got, want []float32, tol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("step %d: %d logits, want %d", step, len(got), len(want))
	}
	worst := 0.0
	for i := range want {
		d := math.Abs(float64(got[i] - want[i]))
		if !(d <= tol) {
			t.Fatalf("step %d: logit[%d] = %v, want %v (|Δ| %.3g > %.3g)", step, i, got[i], want[i], d, tol)
		}
		worst = max(worst, d)
	}
	return worst
}

// Margin is the best logit's lead over the second best: where the
// golden's is under twice a tolerance, a greedy id within it may differ.
func Margin(x []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, v := range x {
		switch f := float64(v); {
		case f > a:
			a, b = f, a
		case f > b:
			b = f
		}
	}
	return a - b
}
