package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/sample"
	"hearth/internal/testmodels"
)

func openTiny(t *testing.T, opt engine.RunnerOptions) *engine.Runner {
	t.Helper()
	r, err := engine.Open(filepath.Join(testmodels.Root(), "chat-tiny"), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

var hello = json.RawMessage(`[{"role":"user","content":"Hello, what is Hearth?"}]`)

// collect runs a request and returns the concatenated content.
func collect(t *testing.T, r *engine.Runner, req engine.Request) (string, engine.Usage, []engine.Delta) {
	t.Helper()
	var sb strings.Builder
	var deltas []engine.Delta
	u, err := r.Generate(context.Background(), req, func(d engine.Delta) error {
		sb.WriteString(d.Content)
		deltas = append(deltas, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sb.String(), u, deltas
}

func TestGenerateGreedyIsDeterministicAndCounts(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{})
	a, ua, _ := collect(t, r, engine.Request{Messages: hello, MaxTokens: 12})
	b, ub, _ := collect(t, r, engine.Request{Messages: hello, MaxTokens: 12})
	if a != b || ua.CompletionTokens != ub.CompletionTokens {
		t.Fatalf("greedy answers differ: %q vs %q", a, b)
	}
	want := len(r.Tokenizer().Encode("<|im_start|>user\nHello, what is Hearth?<|im_end|>\n<|im_start|>assistant\n", false))
	if ua.PromptTokens != want {
		t.Errorf("PromptTokens = %d, want %d", ua.PromptTokens, want)
	}
	if ua.FinishReason == "length" && ua.CompletionTokens != 12 {
		t.Errorf("finish length after %d tokens, want 12", ua.CompletionTokens)
	}
	if a == "" && ua.FinishReason != "stop" {
		t.Errorf("empty answer with finish %q", ua.FinishReason)
	}
}

// TestStopStringSplitAcrossTokens picks a stop string from the middle of
// the greedy answer, spanning a token boundary, and checks the answer ends
// right before it.
func TestStopStringSplitAcrossTokens(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{})
	full, _, deltas := collect(t, r, engine.Request{Messages: hello, MaxTokens: 24})
	if len(deltas) < 4 || len(full) < 8 {
		t.Skipf("greedy answer too short to place a stop string: %q", full)
	}
	// the boundary between the second and third deltas
	cut := len(deltas[0].Content) + len(deltas[1].Content)
	if cut < 1 || cut+1 >= len(full) {
		t.Skipf("no boundary to straddle in %q", full)
	}
	stop := full[cut-1 : cut+1]
	got, u, _ := collect(t, r, engine.Request{Messages: hello, MaxTokens: 24, Stop: []string{stop}})
	if want := full[:strings.Index(full, stop)]; got != want || u.FinishReason != "stop" {
		t.Errorf("with stop %q: got %q (%s), want %q (stop)", stop, got, u.FinishReason, want)
	}
}

func TestContextOverflow(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{ContextTokens: 16})
	_, err := r.Generate(context.Background(), engine.Request{Messages: hello}, func(engine.Delta) error { return nil })
	var ce *engine.ContextError
	if !errors.As(err, &ce) || ce.ContextTokens != 16 || !strings.Contains(err.Error(), "16 tokens") {
		t.Fatalf("error = %v, want a ContextError naming 16 tokens", err)
	}
	_, err = r.Generate(context.Background(), engine.Request{PromptIDs: []int32{1, 2}, MaxTokens: 100}, func(engine.Delta) error { return nil })
	if !errors.As(err, &ce) || ce.MaxTokens != 100 {
		t.Fatalf("error = %v, want a ContextError for max_tokens 100", err)
	}
}

func TestBadRequests(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{})
	for _, req := range []engine.Request{
		{PromptIDs: []int32{1, 99999}},
		{Messages: hello, Sample: sampleTemp(-1)},
		{Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`), TemplateKwargs: map[string]json.RawMessage{"enable_thinking": json.RawMessage(`"yes"`)}},
	} {
		_, err := r.Generate(context.Background(), req, func(engine.Delta) error { return nil })
		var re *engine.RequestError
		if !errors.As(err, &re) {
			t.Errorf("Generate(%+v) error = %v, want a RequestError", req, err)
		}
	}
}

func TestCancelFreesTheModel(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	// a fixed seed: with a random one the sample sometimes ends (an end of
	// sequence) before the third delta, and there is nothing to cancel
	seed := uint64(7)
	opts := sampleTemp(1)
	opts.Seed = &seed
	_, err := r.Generate(ctx, engine.Request{PromptIDs: []int32{5, 6, 7}, Sample: opts}, func(engine.Delta) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	done := make(chan struct{})
	go func() {
		collect(t, r, engine.Request{Messages: hello, MaxTokens: 4})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the next request did not run after a cancelled one")
	}
}

// TestQueueFull fills a one-slot queue behind a running request and checks
// the next request is refused, and that a request whose client gave up
// while queued does not keep its slot.
func TestQueueFull(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{QueueLen: 1})
	block := make(chan struct{})
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // occupies the worker until block closes
		defer wg.Done()
		first := true
		r.Generate(context.Background(), engine.Request{PromptIDs: []int32{5}, MaxTokens: 50}, func(engine.Delta) error {
			if first {
				first = false
				close(started)
				<-block
			}
			return nil
		})
	}()
	<-started
	unblock := sync.OnceFunc(func() { close(block) })
	defer unblock() // even when the test fails, so Close can finish
	quick := engine.Request{PromptIDs: []int32{5}, MaxTokens: 1}
	// A client that gives up while queued frees its slot.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := r.Generate(ctx, quick, func(engine.Delta) error { return nil })
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("queued request with a deadline: error = %v, want DeadlineExceeded", err)
	}
	queued := make(chan error, 1)
	go func() { // retries until it holds the slot, then waits there
		for {
			_, err := r.Generate(context.Background(), quick, func(engine.Delta) error { return nil })
			if !errors.Is(err, engine.ErrQueueFull) {
				queued <- err
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	// Probe until the other request holds the slot: a probe that got
	// queued first gives up after its deadline and frees the slot again.
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err = r.Generate(ctx, quick, func(engine.Delta) error { return nil })
		cancel()
		if errors.Is(err, engine.ErrQueueFull) {
			break
		}
		if !errors.Is(err, context.DeadlineExceeded) || i == 500 {
			t.Fatalf("probe %d: error = %v, want ErrQueueFull or DeadlineExceeded", i, err)
		}
		time.Sleep(5 * time.Millisecond) // let the waiting request take the slot
	}
	unblock()
	wg.Wait()
	if err := <-queued; err != nil {
		t.Errorf("the queued request failed: %v", err)
	}
}

func TestLogprobs(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{})
	_, u, deltas := collect(t, r, engine.Request{PromptIDs: []int32{5, 6, 7}, MaxTokens: 5, Logprobs: true, TopLogprobs: 3})
	n := 0
	for _, d := range deltas {
		for _, lp := range d.Logprobs {
			n++
			if len(lp.Top) != 3 || lp.Top[0].Logprob < lp.Logprob || lp.Logprob > 0 {
				t.Errorf("logprob %+v: want 3 alternatives, the best first, and a log-probability ≤ 0", lp)
			}
			if lp.ID != lp.Top[0].ID {
				t.Errorf("greedy token %d is not the top alternative %d", lp.ID, lp.Top[0].ID)
			}
		}
	}
	if n != u.CompletionTokens {
		t.Errorf("%d logprobs for %d tokens", n, u.CompletionTokens)
	}
}

func sampleTemp(t float64) sample.Options { return sample.Options{Temperature: t} }
