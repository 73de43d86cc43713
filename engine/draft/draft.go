// Package draft proposes tokens for speculative decoding to verify. A
// source only guesses: the target model decides every token
// (engine/speculate.go), so a bad guess costs time, never correctness.
package draft

// Source proposes up to k tokens to follow history (the prompt and the
// answer so far). It may propose none.
type Source interface {
	Draft(history []int32, k int) []int32
}

// NGram is prompt lookup: find the latest earlier place where the last
// few tokens of history occurred, and propose what followed them there.
// Code edits, RAG answers and summaries copy long runs of their prompt,
// which it drafts for free.
type NGram struct {
	Min, Max int // n-gram lengths tried, longest first
}

// DefaultNGram tries the last 4, 3, then 2 tokens: a single token repeats
// too often to predict what follows it.
var DefaultNGram = NGram{Min: 2, Max: 4}

// Draft proposes the continuation of the longest recent n-gram match.
func (g NGram) Draft(history []int32, k int) []int32 {
	if k <= 0 {
		return nil
	}
	for n := min(g.Max, len(history)-1); n >= max(g.Min, 1); n-- {
		tail := history[len(history)-n:]
		// The latest occurrence before the tail itself.
		for start := len(history) - n - 1; start >= 0; start-- {
			if !equal(history[start:start+n], tail) {
				continue
			}
			from := start + n
			to := min(from+k, len(history))
			if from < to {
				return append([]int32(nil), history[from:to]...)
			}
		}
	}
	return nil
}

func equal(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
