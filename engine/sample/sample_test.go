package sample

import (
	"math"
	"testing"
)

func seed(v uint64) *uint64 { return &v }

func TestGreedy(t *testing.T) {
	s := New(Options{}, nil)
	if got := s.Sample([]float32{0.1, 3, -2, 2.9}); got != 1 {
		t.Errorf("greedy = %d, want 1", got)
	}
}

func TestSeedIsReproducible(t *testing.T) {
	logits := []float32{1, 1.2, 0.8, 1.1, 0.9, 1.05}
	draw := func() []int32 {
		s := New(Options{Temperature: 1, Seed: seed(42)}, nil)
		var out []int32
		for i := 0; i < 20; i++ {
			out = append(out, s.Sample(append([]float32(nil), logits...)))
		}
		return out
	}
	a, b := draw(), draw()
	distinct := map[int32]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d: %d vs %d with the same seed", i, a[i], b[i])
		}
		distinct[a[i]] = true
	}
	if len(distinct) < 3 {
		t.Errorf("temperature 1 over near-equal logits drew only %v", distinct)
	}
}

// TestFilters checks each filter leaves only the tokens it should, by
// sampling many times and recording which tokens ever appear.
func TestFilters(t *testing.T) {
	// probabilities at T=1: softmax of log(p) is p
	p := []float64{0.5, 0.25, 0.15, 0.07, 0.03}
	logits := make([]float32, len(p))
	for i, v := range p {
		logits[i] = float32(math.Log(v))
	}
	tests := []struct {
		name string
		opt  Options
		want map[int32]bool
	}{
		{"top_k 2", Options{Temperature: 1, TopK: 2}, map[int32]bool{0: true, 1: true}},
		{"top_p 0.8", Options{Temperature: 1, TopP: 0.8}, map[int32]bool{0: true, 1: true, 2: true}},
		{"min_p 0.2", Options{Temperature: 1, MinP: 0.2}, map[int32]bool{0: true, 1: true, 2: true}},
		{"all", Options{Temperature: 1}, map[int32]bool{0: true, 1: true, 2: true, 3: true, 4: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opt.Seed = seed(7)
			s := New(tt.opt, nil)
			got := map[int32]bool{}
			for i := 0; i < 4000; i++ {
				got[s.Sample(append([]float32(nil), logits...))] = true
			}
			if len(got) != len(tt.want) {
				t.Fatalf("sampled %v, want exactly %v", got, tt.want)
			}
			for id := range got {
				if !tt.want[id] {
					t.Fatalf("sampled %d, want only %v", id, tt.want)
				}
			}
		})
	}
}

func TestPenalties(t *testing.T) {
	s := New(Options{RepetitionPenalty: 2, PresencePenalty: 0.5, FrequencyPenalty: 0.25}, []int32{0})
	s.Accept(1)
	s.Accept(1)
	logits := []float32{4, 4, -4, 4}
	s.Penalize(logits)
	// 0: prompt only → repetition penalty: 4/2 = 2
	// 1: generated twice → 4/2 - 0.5 - 0.25*2 = 1
	// 2: untouched; 3: untouched
	want := []float32{2, 1, -4, 4}
	for i := range want {
		if logits[i] != want[i] {
			t.Errorf("logit[%d] = %v, want %v", i, logits[i], want[i])
		}
	}
}

func TestValidate(t *testing.T) {
	bad := []Options{{Temperature: -1}, {TopP: 1.5}, {TopK: -3}, {MinP: 2}, {PresencePenalty: 3}, {FrequencyPenalty: -2.5}, {Temperature: math.NaN()}}
	for _, o := range bad {
		if o.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", o)
		}
	}
	if err := (Options{Temperature: 0.7, TopP: 0.9, TopK: 40}).Validate(); err != nil {
		t.Errorf("Validate(good) = %v", err)
	}
}

func TestLogSoftmax(t *testing.T) {
	logits := []float32{1, 2, 3, 0}
	chosen, top := LogSoftmax(logits, 1, 2)
	lse := math.Log(math.Exp(1) + math.Exp(2) + math.Exp(3) + 1)
	if d := math.Abs(float64(chosen.Logprob) - (2 - lse)); d > 1e-6 {
		t.Errorf("logprob of 1 = %v, want %v", chosen.Logprob, 2-lse)
	}
	if len(top) != 2 || top[0].ID != 2 || top[1].ID != 1 {
		t.Errorf("top = %+v, want ids 2, 1", top)
	}
}

// TestPlainGreedy checks the options said to reduce to Argmax do: after
// tokens were generated (so penalties would apply), Sample still returns
// Argmax of the untouched logits; and the ones that may not, don't claim to.
func TestPlainGreedy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   Options
		plain bool
	}{
		{"zero", Options{}, true},
		{"top_k 1", Options{Temperature: 0.8, TopK: 1, TopP: 0.9}, true},
		{"repetition off", Options{RepetitionPenalty: 1}, true},
		{"temperature", Options{Temperature: 0.7}, false},
		{"repetition", Options{RepetitionPenalty: 1.3}, false},
		{"presence", Options{PresencePenalty: 0.5}, false},
		{"frequency", Options{TopK: 1, FrequencyPenalty: -0.5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.opt.PlainGreedy(); got != tc.plain {
				t.Fatalf("PlainGreedy() = %v, want %v", got, tc.plain)
			}
			if !tc.plain {
				return
			}
			logits := []float32{0.5, 2, 1.5, 2, -1, 1.9}
			s := New(tc.opt, []int32{1, 3})
			for _, id := range []int32{1, 1, 5} {
				s.Accept(id)
			}
			want := Argmax(logits)
			if got := s.Sample(append([]float32(nil), logits...)); got != want {
				t.Errorf("Sample = %d, want Argmax %d", got, want)
			}
		})
	}
}
