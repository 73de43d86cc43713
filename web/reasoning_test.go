package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// Chat templates that mark thinking as Qwen 3.5's and Qwen3's do: both
// show an assistant's reasoning_content in a <think> block and close an
// empty block when enable_thinking is false; the first opens the block in
// the generation prompt (the reply starts inside it), the second leaves
// opening it to the model.
const (
	thinkTurns = "{%- for m in messages %}<|im_start|>{{ m.role }}\n" +
		"{% if m.role == 'assistant' and m.reasoning_content %}<think>\n{{ m.reasoning_content }}\n</think>\n\n{% endif %}" +
		"{{ m.content }}<|im_end|>\n{% endfor %}"
	prefillTemplate = thinkTurns + "{%- if add_generation_prompt %}<|im_start|>assistant\n" +
		"{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}{% endif %}"
	qwen3Template = thinkTurns + "{%- if add_generation_prompt %}<|im_start|>assistant\n" +
		"{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)

// rawText is what the model writes after prompt, greedily, with no
// parsing: /v1/completions of the rendered text.
func (ts *testServer) rawText(t *testing.T, prompt string, maxTokens int) string {
	t.Helper()
	p, _ := json.Marshal(prompt)
	var out struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	ts.postOK(t, "/v1/completions", fmt.Sprintf(`{"model":"chat-tiny","prompt":%s,"max_tokens":%d,"temperature":0}`, p, maxTokens), &out)
	return out.Choices[0].Text
}

// thinkingOf is what the model thinks after prompt, which opened the
// block: its raw text trimmed, as the split gives it. The tiny model's
// random text never closes the block; the test needs some of it.
func (ts *testServer) thinkingOf(t *testing.T, prompt string, maxTokens int) string {
	t.Helper()
	raw := ts.rawText(t, prompt, maxTokens)
	if strings.Contains(raw, "</think>") {
		t.Fatalf("the test model closed the thinking (%q): choose another prompt", raw)
	}
	want := strings.TrimFunc(raw, unicode.IsSpace)
	if want == "" {
		t.Fatalf("the test model wrote no thinking after %q: choose another prompt", prompt)
	}
	return want
}

// TestReasoningSplit serves a model whose template opens the thinking in
// the generation prompt: on every route its reply comes back as thinking,
// whole and streamed, and none of it as content.
// wantThinkingCapability checks that /v1/models and /api/show list the
// "thinking" capability (as Ollama does) exactly when want, once the model
// has loaded.
func (ts *testServer) wantThinkingCapability(t *testing.T, want bool) {
	t.Helper()
	var models struct {
		Data []struct {
			Capabilities []string `json:"capabilities"`
		} `json:"data"`
	}
	if r := ts.do(t, http.MethodGet, "/v1/models", "", nil); r.Status != http.StatusOK || json.Unmarshal(r.Body, &models) != nil || len(models.Data) == 0 {
		t.Fatalf("GET /v1/models = %d %s", r.Status, r.Body)
	}
	var show struct {
		Capabilities []string `json:"capabilities"`
	}
	ts.postOK(t, "/api/show", `{"model":"chat-tiny"}`, &show)
	if got := slices.Contains(models.Data[0].Capabilities, "thinking"); got != want {
		t.Errorf("/v1/models capabilities %v; thinking listed %v, want %v", models.Data[0].Capabilities, got, want)
	}
	if got := slices.Contains(show.Capabilities, "thinking"); got != want {
		t.Errorf("/api/show capabilities %v; thinking listed %v, want %v", show.Capabilities, got, want)
	}
}

func TestReasoningSplit(t *testing.T) {
	ts := startServer(t, func(c *serverConfig) { c.model = templateModel(t, prefillTemplate) })
	const n = 12
	want := ts.thinkingOf(t, chatML("hello")+"<think>\n", n)
	ts.wantThinkingCapability(t, true)
	msgs := `[{"role":"user","content":"hello"}]`
	greedy := fmt.Sprintf(`"model":"chat-tiny","temperature":0,"max_tokens":%d`, n)

	t.Run("openai", func(t *testing.T) {
		var out struct {
			Choices []struct {
				Message struct {
					Content          *string `json:"content"`
					ReasoningContent string  `json:"reasoning_content"`
				} `json:"message"`
			} `json:"choices"`
			Usage usageBody `json:"usage"`
		}
		ts.postOK(t, "/v1/chat/completions", `{`+greedy+`,"messages":`+msgs+`}`, &out)
		m := out.Choices[0].Message
		if m.ReasoningContent != want || m.Content == nil || *m.Content != "" {
			t.Errorf("message: reasoning_content %q, content %v; want %q and \"\"", m.ReasoningContent, m.Content, want)
		}
		d := out.Usage.CompletionTokensDetails
		if d == nil || d.ReasoningTokens == 0 || d.ReasoningTokens > out.Usage.CompletionTokens {
			t.Errorf("usage %+v: want reasoning_tokens in (0, completion_tokens]", out.Usage)
		}

		var got strings.Builder
		for _, f := range ts.stream(t, "/v1/chat/completions", `{`+greedy+`,"stream":true,"messages":`+msgs+`}`) {
			if f.Data == "[DONE]" {
				continue
			}
			var ch struct {
				Choices []struct {
					Delta struct {
						Content          *string `json:"content"`
						ReasoningContent string  `json:"reasoning_content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(f.Data), &ch); err != nil {
				t.Fatal(err)
			}
			d := ch.Choices[0].Delta
			if d.Content != nil && *d.Content != "" {
				t.Errorf("a content delta %q", *d.Content)
			}
			got.WriteString(d.ReasoningContent)
		}
		if got.String() != want {
			t.Errorf("streamed reasoning_content %q, want %q", got.String(), want)
		}
	})

	t.Run("anthropic", func(t *testing.T) {
		body := fmt.Sprintf(`{"model":"chat-tiny","temperature":0,"max_tokens":%d,"messages":%s`, n, msgs)
		var out struct {
			Content []map[string]any `json:"content"`
		}
		ts.postOK(t, "/v1/messages", body+`}`, &out)
		if len(out.Content) != 1 || out.Content[0]["type"] != "thinking" || out.Content[0]["thinking"] != want || out.Content[0]["signature"] != "" {
			t.Errorf("content %v, want one thinking block with %q", out.Content, want)
		}

		var got strings.Builder
		var events []string
		for _, f := range ts.stream(t, "/v1/messages", body+`,"stream":true}`) {
			var ev struct {
				Type         string `json:"type"`
				ContentBlock struct {
					Type string `json:"type"`
				} `json:"content_block"`
				Delta struct {
					Type     string `json:"type"`
					Thinking string `json:"thinking"`
				} `json:"delta"`
			}
			if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
				t.Fatal(err)
			}
			switch ev.Type {
			case "content_block_start":
				events = append(events, "start "+ev.ContentBlock.Type)
			case "content_block_delta":
				if ev.Delta.Type != "thinking_delta" {
					t.Errorf("a %s delta", ev.Delta.Type)
				}
				got.WriteString(ev.Delta.Thinking)
			case "content_block_stop":
				events = append(events, "stop")
			}
		}
		if got.String() != want || strings.Join(events, ", ") != "start thinking, stop" {
			t.Errorf("streamed thinking %q in blocks %v, want %q in one thinking block", got.String(), events, want)
		}
	})

	t.Run("ollama", func(t *testing.T) {
		type ollamaThinking struct {
			Message *struct {
				Content  string `json:"content"`
				Thinking string `json:"thinking"`
			} `json:"message"`
			Response *string `json:"response"`
			Thinking string  `json:"thinking"`
		}
		opts := fmt.Sprintf(`"model":"chat-tiny","options":{"temperature":0,"num_predict":%d}`, n)
		var chat ollamaThinking
		ts.postOK(t, "/api/chat", `{`+opts+`,"stream":false,"messages":`+msgs+`}`, &chat)
		if chat.Message == nil || chat.Message.Thinking != want || chat.Message.Content != "" {
			t.Errorf("/api/chat message %+v, want thinking %q and no content", chat.Message, want)
		}
		var gen ollamaThinking
		ts.postOK(t, "/api/generate", `{`+opts+`,"stream":false,"prompt":"hello"}`, &gen)
		if gen.Thinking != want || gen.Response == nil || *gen.Response != "" {
			t.Errorf("/api/generate thinking %q, response %v; want %q and \"\"", gen.Thinking, gen.Response, want)
		}

		r := ts.post(t, "/api/chat", `{`+opts+`,"messages":`+msgs+`}`)
		var got strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(string(r.Body)), "\n") {
			var o ollamaThinking
			if err := json.Unmarshal([]byte(line), &o); err != nil {
				t.Fatalf("%v in %q", err, line)
			}
			if o.Message.Content != "" {
				t.Errorf("a content line %q", line)
			}
			got.WriteString(o.Message.Thinking)
		}
		if got.String() != want {
			t.Errorf("streamed thinking %q, want %q", got.String(), want)
		}
	})

	t.Run("responses", func(t *testing.T) {
		body := fmt.Sprintf(`{"model":"chat-tiny","temperature":0,"max_output_tokens":%d,"input":"hello"`, n)
		var out struct {
			Output []struct {
				Type    string `json:"type"`
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"output"`
			Usage responseUsage `json:"usage"`
		}
		ts.postOK(t, "/v1/responses", body+`}`, &out)
		if len(out.Output) != 2 || out.Output[0].Type != "reasoning" || len(out.Output[0].Content) != 1 ||
			out.Output[0].Content[0] != (struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}{"reasoning_text", want}) || out.Output[1].Type != "message" || out.Output[1].Content[0].Text != "" {
			t.Errorf("output %+v, want a reasoning item with %q, then an empty message", out.Output, want)
		}
		if out.Usage.OutputTokensDetails.ReasoningTokens == 0 {
			t.Errorf("usage %+v: no reasoning_tokens", out.Usage)
		}

		var got, done strings.Builder
		var order []string
		// With logprobs asked for, the thinking's tokens still make one
		// reasoning item, not items cut apart by empty messages.
		for _, f := range ts.stream(t, "/v1/responses", body+`,"stream":true,"include":["message.output_text.logprobs"]}`) {
			var ev struct {
				Item struct {
					Type string `json:"type"`
				} `json:"item"`
				Delta string `json:"delta"`
				Text  string `json:"text"`
			}
			if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
				t.Fatal(err)
			}
			switch f.Event {
			case "response.output_item.added":
				order = append(order, ev.Item.Type)
			case "response.reasoning_text.delta":
				got.WriteString(ev.Delta)
			case "response.reasoning_text.done":
				done.WriteString(ev.Text)
			}
		}
		if got.String() != want || done.String() != want || strings.Join(order, ",") != "reasoning,message" {
			t.Errorf("streamed %q (done %q), items %v; want %q in a reasoning item before the message", got.String(), done.String(), order, want)
		}
	})
}

// TestReasoningOff turns thinking off with each route's switch: the
// template closes an empty block, and the model's reply is all answer.
func TestReasoningOff(t *testing.T) {
	ts := startServer(t, func(c *serverConfig) { c.model = templateModel(t, prefillTemplate) })
	const n = 8
	prompt := chatML("hello") + "<think>\n\n</think>\n\n"
	want, promptTokens := ts.rawText(t, prompt, n), len(ts.tokenize(t, prompt, false))
	if want == "" {
		t.Fatal("the test model wrote nothing: choose another prompt")
	}
	msgs := `[{"role":"user","content":"hello"}]`
	chat := fmt.Sprintf(`{"model":"chat-tiny","temperature":0,"max_tokens":%d,"messages":%s,`, n, msgs)
	for _, off := range []string{`"chat_template_kwargs":{"enable_thinking":false}}`, `"reasoning_effort":"none"}`} {
		var out struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
			Usage usageBody `json:"usage"`
		}
		ts.postOK(t, "/v1/chat/completions", chat+off, &out)
		m := out.Choices[0].Message
		if _, ok := m["reasoning_content"]; ok || m["content"] != want || out.Usage.PromptTokens != promptTokens {
			t.Errorf("%s: message %v, %d prompt tokens; want content %q alone, %d prompt tokens", off, m, out.Usage.PromptTokens, want, promptTokens)
		}
	}

	var msg struct {
		Content []map[string]any `json:"content"`
		Usage   anthropicUsage   `json:"usage"`
	}
	ts.postOK(t, "/v1/messages", fmt.Sprintf(`{"model":"chat-tiny","temperature":0,"max_tokens":%d,"messages":%s,"thinking":{"type":"disabled"}}`, n, msgs), &msg)
	if len(msg.Content) != 1 || msg.Content[0]["type"] != "text" || msg.Content[0]["text"] != want || msg.Usage.InputTokens != promptTokens {
		t.Errorf("anthropic: content %v, %d input tokens; want one text block %q, %d", msg.Content, msg.Usage.InputTokens, want, promptTokens)
	}

	var o struct {
		Message         map[string]any `json:"message"`
		PromptEvalCount int            `json:"prompt_eval_count"`
	}
	ts.postOK(t, "/api/chat", fmt.Sprintf(`{"model":"chat-tiny","stream":false,"think":false,"options":{"temperature":0,"num_predict":%d},"messages":%s}`, n, msgs), &o)
	if _, ok := o.Message["thinking"]; ok || o.Message["content"] != want || o.PromptEvalCount != promptTokens {
		t.Errorf("ollama: message %v, %d prompt tokens; want content %q alone, %d", o.Message, o.PromptEvalCount, want, promptTokens)
	}

	var resp struct {
		Output []map[string]any `json:"output"`
	}
	ts.postOK(t, "/v1/responses", fmt.Sprintf(`{"model":"chat-tiny","temperature":0,"max_output_tokens":%d,"input":"hello","reasoning":{"effort":"none"}}`, n), &resp)
	if len(resp.Output) != 1 || resp.Output[0]["type"] != "message" {
		t.Errorf("responses: output %v, want the message alone", resp.Output)
	}
}

// TestReasoningNotOpened serves a Qwen3-style template, which leaves
// opening the block to the model: a reply that does not open it is all
// answer, untouched.
func TestReasoningNotOpened(t *testing.T) {
	ts := startServer(t, func(c *serverConfig) { c.model = templateModel(t, qwen3Template) })
	want := ts.rawText(t, chatML("hello"), 12)
	ts.wantThinkingCapability(t, true)
	if strings.HasPrefix(strings.TrimSpace(want), "<think>") {
		t.Fatalf("the test model opened a thinking block (%q): choose another prompt", want)
	}
	var out struct {
		Choices []struct {
			Message map[string]any `json:"message"`
		} `json:"choices"`
	}
	ts.postOK(t, "/v1/chat/completions", chatBody("hello", 12, ""), &out)
	m := out.Choices[0].Message
	if _, ok := m["reasoning_content"]; ok || m["content"] != want {
		t.Errorf("message %v, want content %q alone", m, want)
	}
}

// TestReasoningConstrained: a constrained answer starts at its first
// token, so even a prompt that opened the thinking gets the JSON as its
// content.
func TestReasoningConstrained(t *testing.T) {
	ts := startServer(t, func(c *serverConfig) { c.model = templateModel(t, prefillTemplate) })
	var out struct {
		Choices []struct {
			Message map[string]any `json:"message"`
		} `json:"choices"`
	}
	ts.postOK(t, "/v1/chat/completions", chatBody("answer in JSON", 16, `,"response_format":{"type":"json_object"}`), &out)
	m := out.Choices[0].Message
	content, _ := m["content"].(string)
	if _, ok := m["reasoning_content"]; ok || !strings.HasPrefix(content, "{") {
		t.Errorf("message %v, want the JSON as content and no reasoning", m)
	}
}

// TestReasoningReplayed sends back an earlier turn's thinking in each
// API's shape: the template gets it as the assistant message's
// reasoning_content.
func TestReasoningReplayed(t *testing.T) {
	ts := startServer(t, func(c *serverConfig) { c.model = templateModel(t, prefillTemplate) })
	rendered := "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</think>\n\na<|im_end|>\n" +
		"<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\n"
	want := len(ts.tokenize(t, rendered, false))
	tests := []struct {
		name, path, body string
	}{
		{"openai", "/v1/chat/completions", `{"max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning_content":"r"},{"role":"user","content":"q2"}]}`},
		{"openai reasoning", "/v1/chat/completions", `{"max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","reasoning":"r"},{"role":"user","content":"q2"}]}`},
		{"anthropic", "/v1/messages", `{"max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"r","signature":""},{"type":"text","text":"a"}]},{"role":"user","content":"q2"}]}`},
		{"ollama", "/api/chat", `{"stream":false,"options":{"num_predict":1},"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a","thinking":"r"},{"role":"user","content":"q2"}]}`},
		{"responses", "/v1/responses", `{"max_output_tokens":1,"input":[{"role":"user","content":"q"},{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"r"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"}]},{"role":"user","content":"q2"}]}`},
	}
	for _, tt := range tests {
		var out struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				InputTokens  int `json:"input_tokens"`
			} `json:"usage"`
			PromptEvalCount int `json:"prompt_eval_count"`
		}
		ts.postOK(t, tt.path, tt.body, &out)
		if got := out.Usage.PromptTokens + out.Usage.InputTokens + out.PromptEvalCount; got != want {
			t.Errorf("%s: %d prompt tokens, want %d (the thinking rendered in its turn)", tt.name, got, want)
		}
	}
	r := ts.post(t, "/v1/chat/completions", `{"messages":[{"role":"assistant","content":"a","reasoning_content":3},{"role":"user","content":"q"}]}`)
	if r.Status != 400 || !strings.Contains(string(r.Body), "messages[0].reasoning_content: expected a string") {
		t.Errorf("a numeric reasoning_content: %d %s, want a 400 naming it", r.Status, r.Body)
	}
}

// TestThinkingCapabilityAbsent: chat-tiny's own template marks no
// reasoning, so neither list claims thinking.
func TestThinkingCapabilityAbsent(t *testing.T) {
	ts := startServer(t)
	ts.rawText(t, "hello", 2)
	ts.wantThinkingCapability(t, false)
}

// TestThinkingBudget: Anthropic's thinking.budget_tokens caps the
// thinking: its first tokens are the model's own, then the closing tag
// goes in and the answer follows, where without a budget the tiny model
// thinks to the end; a budget out of range is a 400 naming it.
func TestThinkingBudget(t *testing.T) {
	ts := startServer(t, func(c *serverConfig) { c.model = templateModel(t, prefillTemplate) })
	const budget, n = 4, 16
	want := strings.TrimFunc(ts.rawText(t, chatML("hello")+"<think>\n", budget), unicode.IsSpace)
	msgs := `[{"role":"user","content":"hello"}]`
	ask := func(thinking string) (blocks []map[string]any, tokens int) {
		var out struct {
			Content []map[string]any `json:"content"`
			Usage   anthropicUsage   `json:"usage"`
		}
		ts.postOK(t, "/v1/messages", fmt.Sprintf(`{"model":"chat-tiny","temperature":0,"max_tokens":%d,"messages":%s,"thinking":%s}`, n, msgs, thinking), &out)
		return out.Content, out.Usage.OutputTokens
	}
	capped, tokens := ask(fmt.Sprintf(`{"type":"enabled","budget_tokens":%d}`, budget))
	if len(capped) != 2 || capped[0]["thinking"] != want || capped[1]["type"] != "text" || capped[1]["text"] == "" || tokens != n {
		t.Errorf("content %v (%d tokens); want thinking %q, then an answer (%d tokens)", capped, tokens, want, n)
	}
	if free, _ := ask(`{"type":"enabled"}`); len(free) != 1 || free[0]["type"] != "thinking" {
		t.Errorf("without a budget: %v, want the tiny model thinking to the end", free)
	}
	for _, b := range []int{0, n} {
		r := ts.post(t, "/v1/messages", fmt.Sprintf(`{"model":"chat-tiny","max_tokens":%d,"messages":%s,"thinking":{"type":"enabled","budget_tokens":%d}}`, n, msgs, b))
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "thinking.budget_tokens") {
			t.Errorf("budget %d: %d %s, want a 400 naming thinking.budget_tokens", b, r.Status, r.Body)
		}
	}
}
