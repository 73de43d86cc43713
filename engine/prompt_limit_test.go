package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"hearth/engine"
)

// TestHugePromptRejectedBeforeTokenizing sends 8 MB of text to a model
// with a 256-token context. It must fail with the context error, found
// from the prompt's length before tokenizing it: memory allocated while
// serving it stays a small multiple of its size (tokenizing it in full
// took about 100 bytes per byte of text).
func TestHugePromptRejectedBeforeTokenizing(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{})
	text := strings.Repeat("hello world, this is a long message. ", (8<<20)/37)
	msgs, err := json.Marshal([]map[string]string{{"role": "user", "content": text}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  engine.Request
	}{
		{"messages", engine.Request{Messages: msgs}},
		{"prompt", engine.Request{Prompt: text}},
		{"messages with max_tokens", engine.Request{Messages: msgs, MaxTokens: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := r.Generate(context.Background(), tt.req, func(engine.Delta) error { return nil })
			runtime.ReadMemStats(&after)
			got, limit := after.TotalAlloc-before.TotalAlloc, uint64(40*len(text))
			t.Logf("%d MB of prompt: %d MB allocated", len(text)>>20, got>>20)
			if got > limit {
				t.Errorf("serving %d bytes of prompt allocated %d MB, want under %d MB", len(text), got>>20, limit>>20)
			}
			var ce *engine.ContextError
			if !errors.As(err, &ce) || ce.ContextTokens != 256 || ce.PromptTokens <= 256 ||
				!strings.Contains(err.Error(), "at least") {
				t.Fatalf("error = %v, want a ContextError saying the prompt is at least some number over 256 tokens", err)
			}
		})
	}
	// The model still answers.
	if _, u, _ := collect(t, r, engine.Request{Messages: hello, MaxTokens: 4}); u.PromptTokens == 0 {
		t.Errorf("a normal request after the huge one: usage %+v", u)
	}
}

// TestLongPromptStopsTokenizingEarly sends a prompt short enough in bytes
// to pass the length bound but far over the context in tokens: the
// tokenizer stops soon after the context is passed, so the count the error
// gives is a lower bound under the full count.
func TestLongPromptStopsTokenizingEarly(t *testing.T) {
	r := openTiny(t, engine.RunnerOptions{})
	rng := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	for sb.Len() < 3000 { // under 255 tokens' worth of bytes at chat-tiny's bound
		sb.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789 .,"[rng.IntN(39)])
	}
	text := sb.String()
	if min := r.Tokenizer().MinTokens(len(text)); min >= 256 {
		t.Fatalf("MinTokens(%d) = %d: the text would not pass the length bound", len(text), min)
	}
	full := len(r.Tokenizer().Encode(text, true))
	if full <= 2*256 {
		t.Fatalf("text has %d tokens, want a text well over the context", full)
	}
	_, err := r.Generate(context.Background(), engine.Request{Prompt: text}, func(engine.Delta) error { return nil })
	var ce *engine.ContextError
	if !errors.As(err, &ce) || !ce.AtLeast || ce.PromptTokens < 256 || ce.PromptTokens >= full {
		t.Fatalf("error = %v (%+v), want a ContextError with a count in [256, %d)", err, ce, full)
	}
}
