package engine

import (
	"context"
	"math"
	"slices"
	"testing"

	"hearth/engine/draft"
	"hearth/engine/sample"
	"hearth/internal/testmodels"
)

// oracle drafts the continuation it was told, wrong at every wrongEvery-th
// drafted token, so that verification both accepts and rejects.
type oracle struct {
	want       []int32 // plain decoding's tokens after the prompt
	prompt     int
	wrongEvery int
	n          int
}

func (o *oracle) Draft(history []int32, k int) []int32 {
	at := len(history) - o.prompt
	var out []int32
	for i := at; i < len(o.want) && len(out) < k; i++ {
		t := o.want[i]
		if o.n++; o.wrongEvery > 0 && o.n%o.wrongEvery == 0 {
			t = (t + 1) % 7
		}
		out = append(out, t)
	}
	return out
}

// decodeAll takes n tokens from a decoder.
func decodeAll(t *testing.T, d decoder, n int) []int32 {
	t.Helper()
	defer d.close()
	var out []int32
	for i := 0; i < n; i++ {
		id, _, err := d.next(i+1 < n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, id)
	}
	return out
}

// TestSpeculativeIdentity is the gate of speculative decoding: for every
// manifest entry, greedy decoding with drafts (prompt lookup, and a draft
// that is right most of the time) gives token for token what plain
// greedy decoding gives, on the device-argmax path and on the host path
// (a repetition penalty moves greedy to the host). Prefill chunks of 8
// make sliding-window caches drop drafts near their limit, and the
// hybrid entries replay their recurrent state.
func TestSpeculativeIdentity(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries {
		t.Run(e.Name, func(t *testing.T) {
			gold, err := e.Golden()
			if err != nil {
				t.Fatal(err)
			}
			model, err := Load(e.Path(), Options{Backend: "cpu", ChunkTokens: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			r := &Runner{model: model}
			// The prompt twice, so prompt lookup finds matches, where the
			// model's positions allow.
			n, prompt := 24, append(slices.Clone(gold.PromptIDs), gold.PromptIDs...)
			if most := model.Checkpoint.Config.MaxPositionEmbeddings; most > 0 && len(prompt)+n > most {
				prompt = gold.PromptIDs
				n = min(n, most-len(prompt))
			}
			for _, opt := range []sample.Options{{Temperature: 0}, {Temperature: 0, RepetitionPenalty: 1.3}} {
				req := &Request{Sample: opt}
				plain := func() []int32 {
					seq, err := model.NewSequence(len(prompt) + n)
					if err != nil {
						t.Fatal(err)
					}
					defer seq.Close()
					d, err := r.newDecoder(context.Background(), seq, req, prompt, false)
					if err != nil {
						t.Fatal(err)
					}
					return decodeAll(t, d, n)
				}()
				for _, src := range []draft.Source{draft.DefaultNGram, &oracle{want: plain, prompt: len(prompt), wrongEvery: 5}} {
					seq, err := model.NewSequence(len(prompt) + n)
					if err != nil {
						t.Fatal(err)
					}
					sp, err := r.newSpeculative(context.Background(), seq, req, prompt, src)
					if err != nil {
						t.Fatal(err)
					}
					got := decodeAll(t, sp, n)
					seq.Close()
					if !slices.Equal(got, plain) {
						t.Fatalf("%T, penalty %v: speculative %v\nplain %v", src, opt.RepetitionPenalty, got, plain)
					}
					if o, ok := src.(*oracle); ok && (sp.stats.Accepted == 0 || sp.stats.Accepted == sp.stats.Drafted) {
						t.Errorf("oracle draft (%d drafted): %d accepted; the test wants both outcomes", o.n, sp.stats.Accepted)
					}
				}
			}
		})
	}
}

// TestSpeculativeSamplingDistribution: with sampling, what speculative
// decoding generates is distributed as plain sampling's. For the second
// and third tokens (the first drafted ones) the counts over 1200 seeds of
// each are compared with a two-sample chi-square test at the 0.1% level;
// seeds are fixed, so the test is deterministic. (An acceptance rule 30%
// too generous fails it.)
func TestSpeculativeSamplingDistribution(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := m.Find("llama-f32")
	gold, err := e.Golden()
	if err != nil {
		t.Fatal(err)
	}
	model, err := Load(e.Path(), Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	r := &Runner{model: model}
	prompt := gold.PromptIDs
	const runs, n = 1200, 3
	gen := func(seed uint64, spec bool) []int32 {
		req := &Request{Sample: sample.Options{Temperature: 1, TopK: 3, Seed: &seed}}
		seq, err := model.NewSequence(len(prompt) + n)
		if err != nil {
			t.Fatal(err)
		}
		defer seq.Close()
		var d decoder
		if spec {
			// Drafts of the greedy continuation: likely, often accepted.
			d, err = r.newSpeculative(context.Background(), seq, req, prompt, &oracle{want: gold.GreedyIDs, prompt: len(prompt)})
		} else {
			d, err = r.newDecoder(context.Background(), seq, req, prompt, false)
		}
		if err != nil {
			t.Fatal(err)
		}
		return decodeAll(t, d, n)
	}
	// Token pos's counts among the runs that began with the greedy
	// tokens before it: there the draft is the likeliest token, so the
	// rule decides often and any bias in it shows.
	plain, spec := [n]map[int32]float64{}, [n]map[int32]float64{}
	for i := range n {
		plain[i], spec[i] = map[int32]float64{}, map[int32]float64{}
	}
	count := func(into *[n]map[int32]float64, ids []int32) {
		for i, id := range ids {
			into[i][id]++
			if id != gold.GreedyIDs[i] {
				return
			}
		}
	}
	for s := range uint64(runs) {
		count(&plain, gen(s, false))
		count(&spec, gen(s+1_000_000, true))
	}
	for pos := 1; pos < n; pos++ {
		chi, df := 0.0, -1
		for id := range union(plain[pos], spec[pos]) {
			a, b := plain[pos][id], spec[pos][id]
			if a+b < 10 {
				continue // too rare to test
			}
			chi += (a - b) * (a - b) / (a + b)
			df++
		}
		if df < 1 {
			t.Fatalf("token %d: one outcome only (%v); the test needs a spread", pos, plain[pos])
		}
		// The 0.1% critical value (Wilson–Hilferty: z = 3.09).
		x := 2 / (9 * float64(df))
		crit := float64(df) * math.Pow(1-x+3.09*math.Sqrt(x), 3)
		if chi > crit {
			t.Errorf("token %d: chi-square %.1f over %d df (critical %.1f): plain %v, speculative %v", pos, chi, df, crit, plain[pos], spec[pos])
		}
	}
}

func union(a, b map[int32]float64) map[int32]bool {
	out := map[int32]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
