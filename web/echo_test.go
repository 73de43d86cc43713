package web

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// echoOut is a text completion with nullable token logprobs.
type echoOut struct {
	Choices []struct {
		Text     string `json:"text"`
		Logprobs *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []*float64           `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usageBody `json:"usage"`
}

// TestCompletionsEcho: echo gives the prompt back before the completion,
// with each prompt token's logprob given the ones before it (the first
// null) ahead of the completion's own. The prompt logprobs are the
// decoder's: a prompt that ends with the greedy continuation of its start
// scores that token as the greedy decode did. With max_tokens 0 nothing is
// generated (scoring), and a stream sends the prompt as its first chunk.
func TestCompletionsEcho(t *testing.T) {
	ts := startServer(t)
	const prompt = "The capital of France is"
	var plain echoOut
	ts.postOK(t, "/v1/completions", `{"model":"chat-tiny","prompt":"`+prompt+`","max_tokens":3,"temperature":0,"logprobs":2}`, &plain)
	var echoed echoOut
	ts.postOK(t, "/v1/completions", `{"model":"chat-tiny","prompt":"`+prompt+`","max_tokens":3,"temperature":0,"logprobs":2,"echo":true}`, &echoed)
	ids := ts.tokenize(t, prompt, true)
	e, p := echoed.Choices[0], plain.Choices[0]
	if e.Text != prompt+p.Text {
		t.Errorf("echo text %q, want the prompt then %q", e.Text, p.Text)
	}
	if e.Logprobs == nil || len(e.Logprobs.Tokens) != len(ids)+3 || len(e.Logprobs.TopLogprobs) != len(ids)+3 {
		t.Fatalf("echo logprobs %+v, want %d prompt tokens and 3 more", e.Logprobs, len(ids))
	}
	lp := e.Logprobs
	if lp.TokenLogprobs[0] != nil || lp.TopLogprobs[0] != nil {
		t.Errorf("the first prompt token has logprob %v, top %v; want null", lp.TokenLogprobs[0], lp.TopLogprobs[0])
	}
	for i := 1; i < len(ids); i++ {
		if lp.TokenLogprobs[i] == nil || *lp.TokenLogprobs[i] > 0 || len(lp.TopLogprobs[i]) == 0 {
			t.Errorf("prompt token %d: logprob %v, top %v", i, lp.TokenLogprobs[i], lp.TopLogprobs[i])
		}
	}
	for i := range 3 {
		if got, want := *lp.TokenLogprobs[len(ids)+i], *p.Logprobs.TokenLogprobs[i]; math.Abs(got-want) > 1e-5 {
			t.Errorf("completion token %d: echo logprob %v, plain %v", i, got, want)
		}
	}
	if off := lp.TextOffset; off[0] != 0 || off[len(ids)] != len(strings.Join(lp.Tokens[:len(ids)], "")) {
		t.Errorf("text offsets %v", off)
	}

	// The prompt plus its greedy next token, scored: that token's logprob
	// is the greedy step's.
	var first echoOut
	ts.postOK(t, "/v1/completions", fmt.Sprintf(`{"model":"chat-tiny","prompt":%s,"max_tokens":1,"temperature":0,"logprobs":1,"return_token_ids":true}`, jsonIDs(ids)), &first)
	next := ts.tokenize(t, prompt+first.Choices[0].Text, true)
	if len(next) != len(ids)+1 {
		t.Skipf("the greedy token does not re-tokenize on its own (%v → %v)", ids, next)
	}
	var scored echoOut
	ts.postOK(t, "/v1/completions", fmt.Sprintf(`{"model":"chat-tiny","prompt":%s,"max_tokens":0,"logprobs":1,"echo":true}`, jsonIDs(next)), &scored)
	s := scored.Choices[0]
	if scored.Usage.CompletionTokens != 0 || s.FinishReason != "length" || len(s.Logprobs.Tokens) != len(next) {
		t.Fatalf("scoring: %d completion tokens, finish %q, %d tokens; want 0, length, %d", scored.Usage.CompletionTokens, s.FinishReason, len(s.Logprobs.Tokens), len(next))
	}
	if s.Text != ts.detokenize(t, next) {
		t.Errorf("scoring text %q, want the prompt's %q", s.Text, ts.detokenize(t, next))
	}
	if got, want := *s.Logprobs.TokenLogprobs[len(ids)], *first.Choices[0].Logprobs.TokenLogprobs[0]; math.Abs(got-want) > 1e-4 {
		t.Errorf("the greedy token scored %v in the prompt, %v when decoded", got, want)
	}

	r := ts.post(t, "/v1/completions", `{"model":"chat-tiny","prompt":"`+prompt+`","max_tokens":2,"temperature":0,"echo":true,"stream":true}`)
	fs := frames(t, r.Body)
	var chunk struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if len(fs) == 0 || json.Unmarshal([]byte(fs[0].Data), &chunk) != nil || len(chunk.Choices) == 0 || chunk.Choices[0].Text != prompt {
		t.Errorf("the stream's first chunk %v, want the prompt", fs)
	}
}

// jsonIDs writes token ids as a JSON array.
func jsonIDs(ids []int32) string {
	b, _ := json.Marshal(ids)
	return string(b)
}
