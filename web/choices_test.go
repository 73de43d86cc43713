package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestChoices: n choices, one after another or decoding together (a
// runner that batches, --parallel 4), choice i sampled with seed+i, so
// each equals the request with n 1 and that seed; the prompt counts once
// in the usage, the completions add up; a stream sends each choice's
// chunks with its index and one [DONE]; greedy choices agree.
func TestChoices(t *testing.T) {
	for _, parallel := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallel%d", parallel), func(t *testing.T) { testChoices(t, parallel) })
	}
}

func testChoices(t *testing.T, parallel int) {
	ts := startServer(t, func(c *serverConfig) { c.runner.Parallel = parallel })
	sampled := func(n, seed int, extra string) string {
		return fmt.Sprintf(`{"model":"chat-tiny","messages":[{"role":"user","content":"hello"}],"temperature":1,"seed":%d,"max_tokens":6,"n":%d%s}`, seed, n, extra)
	}
	var three chatOut
	ts.postOK(t, "/v1/chat/completions", sampled(3, 40, ""), &three)
	if len(three.Choices) != 3 {
		t.Fatalf("%d choices, want 3", len(three.Choices))
	}
	completion := 0
	for i, ch := range three.Choices {
		var one chatOut
		ts.postOK(t, "/v1/chat/completions", sampled(1, 40+i, ""), &one)
		if *ch.Message.Content != *one.Choices[0].Message.Content {
			t.Errorf("choice %d: %q; the request with seed %d alone: %q", i, *ch.Message.Content, 40+i, *one.Choices[0].Message.Content)
		}
		completion += one.Usage.CompletionTokens
		if i == 0 && three.Usage.PromptTokens != one.Usage.PromptTokens {
			t.Errorf("prompt_tokens %d, want %d (once)", three.Usage.PromptTokens, one.Usage.PromptTokens)
		}
	}
	if three.Usage.CompletionTokens != completion {
		t.Errorf("completion_tokens %d, want the choices' %d", three.Usage.CompletionTokens, completion)
	}
	var raw struct {
		Choices []struct {
			Index int `json:"index"`
		} `json:"choices"`
	}
	ts.postOK(t, "/v1/chat/completions", sampled(3, 40, ""), &raw)
	for i, ch := range raw.Choices {
		if ch.Index != i {
			t.Errorf("choice %d has index %d", i, ch.Index)
		}
	}

	// Streamed: the same texts, by index.
	r := ts.post(t, "/v1/chat/completions", sampled(3, 40, `,"stream":true,"stream_options":{"include_usage":true}`))
	texts := map[int]string{}
	done, usage := 0, 0
	for _, f := range frames(t, r.Body) {
		if f.Data == "[DONE]" {
			done++
			continue
		}
		var ch struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *usageBody `json:"usage"`
		}
		if err := json.Unmarshal([]byte(f.Data), &ch); err != nil {
			t.Fatal(err)
		}
		if ch.Usage != nil {
			usage = ch.Usage.CompletionTokens
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				texts[c.Index] += *c.Delta.Content
			}
		}
	}
	for i, ch := range three.Choices {
		if texts[i] != *ch.Message.Content {
			t.Errorf("streamed choice %d: %q, want %q", i, texts[i], *ch.Message.Content)
		}
	}
	if done != 1 || usage != three.Usage.CompletionTokens {
		t.Errorf("%d [DONE], usage %d; want 1 and %d", done, usage, three.Usage.CompletionTokens)
	}

	// Text completions, and greedy choices.
	var comp struct {
		Choices []struct {
			Text  string `json:"text"`
			Index int    `json:"index"`
		} `json:"choices"`
	}
	ts.postOK(t, "/v1/completions", `{"model":"chat-tiny","prompt":"hello","max_tokens":5,"temperature":0,"n":2}`, &comp)
	if len(comp.Choices) != 2 || comp.Choices[0].Text != comp.Choices[1].Text || comp.Choices[1].Index != 1 {
		t.Errorf("greedy completions: %+v, want two equal choices", comp.Choices)
	}
	if parallel > 1 {
		// The choices took the batched path (whether two of them shared a
		// pass depends on timing: engine.TestBatchedRequests makes sure).
		loaded := ts.pool.Loaded()
		if len(loaded) != 1 || loaded[0].Parallel != parallel || loaded[0].BatchPasses == 0 {
			t.Errorf("loaded %+v: the choices did not decode through the batcher", loaded)
		}
	}
	for _, n := range []int{0, maxChoices + 1} {
		if r := ts.post(t, "/v1/chat/completions", sampled(n, 1, "")); r.Status != 400 || !strings.Contains(string(r.Body), `"param":"n"`) {
			t.Errorf("n %d: %d %s, want a 400 naming n", n, r.Status, r.Body)
		}
	}
}
