package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"hearth/engine"
	"hearth/engine/sample"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

// TestForwardBatchMatchesAlone: a batched step gives each sequence the
// logits it gets run alone, on every oracle-checked model whose family
// batches (f32 and q4g64 on the cpu, a model of each kind of layer on
// the gpu). The sequences sit at different
// positions (prompts of different lengths), decode greedily for a dozen
// steps, and one leaves the batch halfway, as a finished stream does.
func TestForwardBatchMatchesAlone(t *testing.T) {
	man, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	// lavapipe compiles each model's kernels anew (seconds a model): the
	// gpu runs a model of each kind of layer (plain, softcapped and
	// sliding, LongRoPE, experts, Gemma 4's shared caches, Qwen 3.5's
	// recurrent state).
	onGPU := map[string]bool{"llama-f32": true, "gemma2-f32": true, "gemma3-f32": true, "phi3-f32": true, "qwen3_moe-f32": true, "gemma4_kv-f32": true, "qwen3_5-f32": true}
	for _, backend := range []string{"cpu", "gpu"} {
		for _, e := range man.Entries {
			if backend == "gpu" && !onGPU[e.Name] || backend == "cpu" && e.Variant != "f32" && e.Variant != "q4g64" {
				continue
			}
			t.Run(backend+"/"+e.Name, func(t *testing.T) { checkBatched(t, e, backend) })
		}
	}
}

func checkBatched(t *testing.T, e testmodels.Entry, backend string) {
	g, err := e.Golden()
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.Load(e.Path(), engine.Options{Backend: backend})
	if backend == "gpu" {
		testenv.Need(t, "a gpu backend", err == nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.CanBatch() {
		t.Skipf("family %s runs sequences one at a time", m.Family.Name)
	}
	const steps = 12
	ctx := context.Background()
	p := g.PromptIDs
	// The long prompt takes its stream past phi3's LongRoPE switch (32)
	// and the sliding windows while the others stay short of them.
	var long []int32
	for len(long) < min(30, m.Checkpoint.Config.MaxPositionEmbeddings-steps-1) {
		long = append(long, p[len(long)%len(p)])
	}
	prompts := [][]int32{p, p[:len(p)/2], p[len(p)/3:], p[:1], long}
	type stream struct {
		alone, batched *engine.Sequence
		next           int32
		leaves         int // steps it takes before leaving
	}
	var ss []*stream
	for i, pr := range prompts {
		s := &stream{leaves: steps}
		if i == 1 {
			s.leaves = steps / 2
		}
		for _, seq := range []**engine.Sequence{&s.alone, &s.batched} {
			if *seq, err = m.NewSequence(len(pr) + steps + 1); err != nil {
				t.Fatal(err)
			}
			defer (*seq).Close()
		}
		la, err := s.alone.Forward(ctx, pr, false)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := s.batched.Forward(ctx, pr, false)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxDiff(la, lb); d != 0 {
			t.Fatalf("prompt %d: two prefills differ by %g", i, d)
		}
		s.next = int32(sample.Argmax(la))
		ss = append(ss, s)
	}
	tol := e.Tolerance.MaxAbsLogit
	worst, oracle := 0.0, 0.0
	for step := range steps {
		var seqs []*engine.Sequence
		var tokens []int32
		var live []*stream
		for _, s := range ss {
			if step < s.leaves {
				seqs, tokens, live = append(seqs, s.batched), append(tokens, s.next), append(live, s)
			}
		}
		got, err := m.ForwardBatch(ctx, seqs, tokens)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for i, s := range live {
			want, err := s.alone.Forward(ctx, []int32{s.next}, false)
			if err != nil {
				t.Fatal(err)
			}
			worst = math.Max(worst, maxDiff(got[i], want))
			// Stream 0 decodes the golden prompt greedily: where the golden
			// has the step, the batched logits keep the fidelity contract.
			if s == ss[0] && step+1 < len(g.Logits) && s.next == g.GreedyIDs[step] {
				oracle = math.Max(oracle, maxDiff(got[i], g.Logits[step+1]))
			}
			a, b := sample.Argmax(got[i]), sample.Argmax(want)
			if a != b {
				t.Fatalf("step %d, stream %d at position %d: batched picks %d, alone %d", step, i, s.alone.Len()-1, a, b)
			}
			s.next = int32(a)
		}
	}
	// The rows share matmuls whose sums may run in another order than a
	// one-row pass's (the gpu's several-row kernel): batched and alone
	// are each within the entry's tolerance of transformers, so within
	// twice it of each other; the oracle check holds batched to the
	// tolerance itself.
	if worst > 2*tol {
		t.Errorf("batched logits differ from alone by %g (twice the tolerance: %g)", worst, 2*tol)
	}
	if oracle > tol {
		t.Errorf("batched logits of the golden prompt differ from transformers' by %g (tolerance %g)", oracle, tol)
	}
	t.Logf("largest difference %g from alone, %g from the golden", worst, oracle)
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// TestForwardBatchRefuses: rows that cannot go into a pass are refused
// with the reason, and leave every sequence as it was.
func TestForwardBatchRefuses(t *testing.T) {
	m, err := engine.Load(testmodels.Root()+"/llama-f32", engine.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	a, _ := m.NewSequence(4)
	defer a.Close()
	full, _ := m.NewSequence(2)
	defer full.Close()
	if _, err := full.Forward(ctx, []int32{1, 2}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ForwardBatch(ctx, []*engine.Sequence{a, full}, []int32{3, 4}); err == nil || fmt.Sprint(err) != "row 1: 2 tokens held + 1 exceed the context of 2" {
		t.Errorf("a full sequence: %v", err)
	}
	if a.Len() != 0 || full.Len() != 2 {
		t.Errorf("lengths after a refused step: %d and %d, want 0 and 2", a.Len(), full.Len())
	}
	if _, err := m.ForwardBatch(ctx, []*engine.Sequence{a}, []int32{3, 4}); err == nil {
		t.Error("one sequence with two tokens: no error")
	}
}

// TestBatchedRequests: concurrent requests to a runner that batches
// answer exactly as they do one at a time, greedy, sampled with a seed,
// with logprobs and with a stop string; one whose client leaves midway
// ends alone; more requests than Parallel wait for a place; and the steps
// did run together (each client holds its first delta until as many
// requests as there are places have one, so that those are all decoding
// at once however the machine schedules them).
func TestBatchedRequests(t *testing.T) {
	// Without the prompt cache: which prefix a request finds cached
	// depends on the order the requests ran in, which differs between the
	// two runners, and a prefill split at another place may take the GEMM
	// for rows the other runner ran as matrix–vector products, summed in
	// another order (TestPromptCache* hold the cache to its own contract).
	alone := openTiny(t, engine.RunnerOptions{PromptCacheBytes: -1})
	batched := openTiny(t, engine.RunnerOptions{Parallel: 4, PromptCacheBytes: -1})
	if got := batched.Info().Parallel; got != 4 {
		t.Fatalf("Info().Parallel = %d, want 4", got)
	}
	seed := uint64(11)
	msg := func(s string) json.RawMessage {
		b, _ := json.Marshal([]map[string]string{{"role": "user", "content": s}})
		return b
	}
	reqs := []engine.Request{
		{Messages: msg("Hello, what is Hearth?"), MaxTokens: 40},
		{Messages: msg("Tell me a story about a fox."), MaxTokens: 33},
		{Messages: msg("hi"), MaxTokens: 40, Sample: sample.Options{Temperature: 0.9, Seed: &seed}},
		{Messages: msg("What can you do with pictures and sound, and how fast?"), MaxTokens: 25, Logprobs: true, TopLogprobs: 2},
		{Messages: msg("Count to ten."), MaxTokens: 40, Stop: []string{"e"}},
		{Messages: msg("One more, while the others run."), MaxTokens: 30},
	}
	want := make([]string, len(reqs))
	for i, req := range reqs {
		var err error
		if want[i], err = answer(context.Background(), alone, req); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]string, len(reqs))
	errs := make([]error, len(reqs)+1)
	// The gate holds each first delta until as many requests as there are
	// places have one. Not all of them: the requests beyond Parallel wait
	// for a place, and a held stream keeps its place (its deltas fill
	// their buffer and stop it there), so waiting for every request would
	// wait forever whenever the first four to get places answer at length.
	var wg, firsts sync.WaitGroup
	var arrived atomic.Int32
	firsts.Add(4)
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			arrive := func() {
				once.Do(func() {
					if arrived.Add(1) <= 4 {
						firsts.Done()
					}
				})
			}
			defer arrive() // a request that ends without a delta arrives too
			got[i], errs[i] = answerGated(context.Background(), batched, req, func() { arrive(); firsts.Wait() })
		}()
	}
	// The client that leaves: cancelled after its fifth delta.
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		_, err := batched.Generate(ctx, engine.Request{Messages: msg("A long answer, please."), MaxTokens: 200}, func(engine.Delta) error {
			if n++; n == 5 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			errs[len(reqs)] = fmt.Errorf("the cancelled request ended with %v", err)
		}
	}()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	for i := range reqs {
		if got[i] != want[i] {
			t.Errorf("request %d: batched %q, alone %q", i, got[i], want[i])
		}
	}
	passes, rows, _ := batched.BatchStats()
	if passes == 0 || rows <= passes {
		t.Errorf("%d rows in %d passes: the steps never ran together", rows, passes)
	}
	t.Logf("%d rows in %d passes (%.2f a pass)", rows, passes, float64(rows)/float64(max(passes, 1)))
}

// answer is a request's text, each token's logprobs written after it.
func answer(ctx context.Context, r *engine.Runner, req engine.Request) (string, error) {
	return answerGated(ctx, r, req, func() {})
}

// answerGated is answer calling gate before taking each delta.
func answerGated(ctx context.Context, r *engine.Runner, req engine.Request, gate func()) (string, error) {
	var sb strings.Builder
	u, err := r.Generate(ctx, req, func(d engine.Delta) error {
		gate()
		sb.WriteString(d.Content)
		for _, lp := range d.Logprobs {
			fmt.Fprintf(&sb, "[%d %.5f]", lp.ID, lp.Logprob)
		}
		return nil
	})
	fmt.Fprintf(&sb, " (%d tokens, %s)", u.CompletionTokens, u.FinishReason)
	return sb.String(), err
}
