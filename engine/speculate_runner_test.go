package engine_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
)

// script drafts, after the prompt, the tokens it was given (those plain
// decoding produced, and beyond them whatever extra holds): runs that the
// target accepts whole, across stop strings, EOS and max_tokens.
type script struct {
	prompt  int
	ids     []int32
	onDraft func()
}

func (s *script) Draft(history []int32, k int) []int32 {
	if s.onDraft != nil {
		s.onDraft()
	}
	at := len(history) - s.prompt
	if at < 0 || at >= len(s.ids) {
		return nil
	}
	return append([]int32(nil), s.ids[at:min(at+k, len(s.ids))]...)
}

// TestSpeculativeEnds: through the runner, speculative decoding ends where
// plain decoding ends when an accepted run holds the max_tokens limit, a
// stop string or the end of sequence, and a cancel during drafting ends
// the request with the context's error after a prefix of the answer.
func TestSpeculativeEnds(t *testing.T) {
	// The starter model: it answers in a few dozen tokens and ends.
	open := func(opt engine.RunnerOptions) *engine.Runner {
		r, err := engine.Open(filepath.Join("..", "assets", "starter"), opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	plainR := open(engine.RunnerOptions{})
	// The plain greedy answer's ids, read through logprobs.
	var ids []int32
	text, u, deltas := collect(t, plainR, engine.Request{Messages: hello, MaxTokens: 120, Logprobs: true})
	for _, d := range deltas {
		for _, lp := range d.Logprobs {
			ids = append(ids, lp.ID)
		}
	}
	if u.FinishReason != "stop" || len(ids) < 12 {
		t.Fatalf("the tiny model's answer %q (%s, %d ids) cannot take this test", text, u.FinishReason, len(ids))
	}
	prompt := u.PromptTokens
	src := &script{prompt: prompt, ids: append(append([]int32(nil), ids...), 5, 6, 7, 8)} // junk past the end
	specR := open(engine.RunnerOptions{Draft: src})

	for _, tc := range []struct {
		name string
		req  engine.Request
	}{
		{"eos in a draft", engine.Request{Messages: hello, MaxTokens: 120}},
		{"max_tokens in a run", engine.Request{Messages: hello, MaxTokens: 7}},
		{"stop string in a run", engine.Request{Messages: hello, MaxTokens: 120, Stop: []string{text[len(text)/2 : len(text)/2+3]}}},
	} {
		want, wu, _ := collect(t, plainR, tc.req)
		got, gu, _ := collect(t, specR, tc.req)
		if got != want || gu.CompletionTokens != wu.CompletionTokens || gu.FinishReason != wu.FinishReason || gu.StopSequence != wu.StopSequence {
			t.Errorf("%s: speculative %q (%d tokens, %s), plain %q (%d, %s)", tc.name, got, gu.CompletionTokens, gu.FinishReason, want, wu.CompletionTokens, wu.FinishReason)
		}
		if gu.Accepted == 0 {
			t.Errorf("%s: no draft accepted (%d drafted)", tc.name, gu.Drafted)
		}
	}

	// Cancelled while drafting the third pass.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	passes := 0
	cancelR := open(engine.RunnerOptions{Draft: &script{prompt: prompt, ids: ids, onDraft: func() {
		if passes++; passes == 3 {
			cancel()
		}
	}}})
	var sb strings.Builder
	_, err := cancelR.Generate(ctx, engine.Request{Messages: hello, MaxTokens: 120}, func(d engine.Delta) error {
		sb.WriteString(d.Content)
		return nil
	})
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(text, sb.String()) {
		t.Errorf("cancelled: %v after %q, want context.Canceled after a prefix of %q", err, sb.String(), text)
	}
}
