// Package sample picks the next token from logits: greedy, temperature,
// top-k, top-p, min-p, repetition/presence/frequency penalties, seeded. It
// knows only logits and Options.
package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Options are the sampling parameters of one request. Zero values mean
// "off" except Temperature, where 0 means greedy.
type Options struct {
	Temperature       float64
	TopK              int
	TopP              float64 // 0 or 1 = off
	MinP              float64
	RepetitionPenalty float64 // 0 or 1 = off (divides positive logits of seen tokens, multiplies negative)
	PresencePenalty   float64 // subtracted once from every seen token
	FrequencyPenalty  float64 // subtracted per occurrence
	Seed              *uint64 // nil = random
}

// Range is the closed interval a parameter must lie in.
type Range struct{ Lo, Hi float64 }

// Contains reports whether v lies in r (NaN never does).
func (r Range) Contains(v float64) bool { return v >= r.Lo && v <= r.Hi }

// The ranges the sampler accepts. An API may narrow one (OpenAI's
// temperature stops at 2, Anthropic's at 1) but checks against these,
// so a request is never accepted by one layer and refused by the other.
var (
	TemperatureRange       = Range{0, 100}
	TopPRange              = Range{0, 1}
	MinPRange              = Range{0, 1}
	PenaltyRange           = Range{-2, 2} // presence and frequency
	RepetitionPenaltyRange = Range{0, 100}
)

// Validate names the first out-of-range parameter.
func (o Options) Validate() error {
	for _, c := range []struct {
		name string
		v    float64
		r    Range
	}{
		{"temperature", o.Temperature, TemperatureRange},
		{"top_p", o.TopP, TopPRange},
		{"min_p", o.MinP, MinPRange},
		{"repetition_penalty", o.RepetitionPenalty, RepetitionPenaltyRange},
		{"presence_penalty", o.PresencePenalty, PenaltyRange},
		{"frequency_penalty", o.FrequencyPenalty, PenaltyRange},
	} {
		if !c.r.Contains(c.v) {
			return fmt.Errorf("%s %v is out of range [%v, %v]", c.name, c.v, c.r.Lo, c.r.Hi)
		}
	}
	if o.TopK < 0 {
		return fmt.Errorf("top_k %d must not be negative", o.TopK)
	}
	return nil
}

// PlainGreedy reports whether Sample reduces to Argmax of the logits as
// the model gave them: greedy (temperature 0 or top_k 1) with no penalty
// that would change them. The engine then lets the backend pick the token
// and reads back only its id.
func (o Options) PlainGreedy() bool {
	return o.greedy() && !o.repetition() && o.PresencePenalty == 0 && o.FrequencyPenalty == 0
}

// greedy reports whether Sample takes the largest logit.
func (o Options) greedy() bool { return o.Temperature == 0 || o.TopK == 1 }

// repetition reports whether the repetition penalty is on.
func (o Options) repetition() bool { return o.RepetitionPenalty > 0 && o.RepetitionPenalty != 1 }

// Sampler holds a request's random state and the counts of tokens seen so
// far (for penalties).
type Sampler struct {
	opt    Options
	rng    *rand.Rand
	counts map[int32]int
	idx    []int // scratch
	probs  []float64
}

// New makes a sampler. seen are the prompt tokens, which count for the
// repetition penalty as in transformers (but not for the OpenAI presence
// and frequency penalties, which look only at generated tokens).
func New(opt Options, seen []int32) *Sampler {
	seed := rand.Uint64()
	if opt.Seed != nil {
		seed = *opt.Seed
	}
	s := &Sampler{opt: opt, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), counts: map[int32]int{}}
	if opt.repetition() {
		for _, id := range seen {
			if _, ok := s.counts[id]; !ok {
				s.counts[id] = 0 // seen, not generated
			}
		}
	}
	return s
}

// Accept records a generated token.
func (s *Sampler) Accept(id int32) { s.counts[id]++ }

// Penalize applies the penalties to logits in place.
func (s *Sampler) Penalize(logits []float32) {
	rp := float32(s.opt.RepetitionPenalty)
	for id, n := range s.counts {
		if int(id) >= len(logits) {
			continue
		}
		l := logits[id]
		if rp > 0 && rp != 1 {
			if l > 0 {
				l /= rp
			} else {
				l *= rp
			}
		}
		if n > 0 {
			l -= float32(s.opt.PresencePenalty) + float32(s.opt.FrequencyPenalty)*float32(n)
		}
		logits[id] = l
	}
}

// Sample penalizes logits (in place) and picks a token.
func (s *Sampler) Sample(logits []float32) int32 {
	s.Penalize(logits)
	if s.opt.greedy() {
		return Argmax(logits)
	}
	idx, probs, total := s.candidates(logits)
	r := s.rng.Float64() * total
	for i, p := range probs {
		r -= p
		if r <= 0 {
			return int32(idx[i])
		}
	}
	return int32(idx[len(idx)-1])
}

// candidates are the tokens sampling may pick, best first, with their
// probabilities after temperature, top-k, min-p and top-p (not
// renormalized: total is their sum).
func (s *Sampler) candidates(logits []float32) (idx []int, probs []float64, total float64) {
	if cap(s.idx) < len(logits) {
		s.idx = make([]int, len(logits))
		s.probs = make([]float64, len(logits))
	}
	idx = s.idx[:len(logits)]
	for i := range idx {
		idx[i] = i
	}
	k := len(idx)
	if s.opt.TopK > 0 && s.opt.TopK < k {
		k = s.opt.TopK
	}
	sort.Slice(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	idx = idx[:k]
	t := s.opt.Temperature
	probs = s.probs[:k]
	mx := float64(logits[idx[0]])
	var sum float64
	for i, id := range idx {
		probs[i] = math.Exp((float64(logits[id]) - mx) / t)
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
	if s.opt.MinP > 0 {
		floor := probs[0] * s.opt.MinP
		for k > 1 && probs[k-1] < floor {
			k--
		}
	}
	if p := s.opt.TopP; p > 0 && p < 1 {
		var c float64
		for i := 0; i < k; i++ {
			c += probs[i]
			if c >= p {
				k = i + 1
				break
			}
		}
	}
	for _, p := range probs[:k] {
		total += p
	}
	return idx[:k], probs[:k], total
}

// Verify decides a drafted token as speculative decoding's rejection rule
// does for a draft that proposes one token with certainty: logits are the
// target's (penalized here, in place, as Sample does), and the result is
// distributed exactly as Sample's would be. Greedy: the draft stands when
// it is the argmax, else the argmax replaces it. Sampling: the draft
// stands with its probability p(draft); otherwise a token is drawn from
// the rest of the distribution, renormalized (the residual max(p − q, 0)
// with q the draft's point mass). accepted says whether the draft stood.
func (s *Sampler) Verify(logits []float32, draft int32) (id int32, accepted bool) {
	s.Penalize(logits)
	if s.opt.greedy() {
		id = Argmax(logits)
		return id, id == draft
	}
	idx, probs, total := s.candidates(logits)
	pd := 0.0
	for i, x := range idx {
		if int32(x) == draft {
			pd = probs[i]
		}
	}
	if s.rng.Float64()*total < pd {
		return draft, true
	}
	r := s.rng.Float64() * (total - pd)
	last := int32(-1)
	for i, p := range probs {
		if int32(idx[i]) == draft {
			continue
		}
		last = int32(idx[i])
		r -= p
		if r <= 0 {
			return last, false
		}
	}
	if last < 0 { // the draft was the only candidate yet lost: cannot happen, as pd = total
		return draft, true
	}
	return last, false
}

// Argmax returns the index of the largest logit (the first on ties).
func Argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// Logprob is a token and its log-probability.
type Logprob struct {
	ID      int32
	Logprob float32
}

// LogSoftmax returns the log-probability of id under logits and the top n
// alternatives, computed from the logits as the model produced them (before
// penalties and temperature), as OpenAI's API reports them.
func LogSoftmax(logits []float32, id int32, n int) (Logprob, []Logprob) {
	mx := logits[Argmax(logits)]
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - mx))
	}
	lse := float64(mx) + math.Log(sum)
	chosen := Logprob{ID: id, Logprob: float32(float64(logits[id]) - lse)}
	if n <= 0 {
		return chosen, nil
	}
	n = min(n, len(logits))
	top := make([]Logprob, 0, n+1)
	for i, v := range logits {
		lp := float32(float64(v) - lse)
		if len(top) < n || lp > top[len(top)-1].Logprob {
			j := sort.Search(len(top), func(j int) bool { return top[j].Logprob < lp })
			top = append(top, Logprob{})
			copy(top[j+1:], top[j:])
			top[j] = Logprob{ID: int32(i), Logprob: lp}
			if len(top) > n {
				top = top[:n]
			}
		}
	}
	return chosen, top
}
