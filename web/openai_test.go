package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// chatOut is the part of a chat completion the tests read.
type chatOut struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				Bytes       []int   `json:"bytes"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usageBody `json:"usage"`
}

func (c chatOut) text() string {
	if len(c.Choices) == 0 || c.Choices[0].Message.Content == nil {
		return ""
	}
	return *c.Choices[0].Message.Content
}

// chatBody is a greedy chat request for one user message.
func chatBody(msg string, maxTokens int, extra string) string {
	b, _ := json.Marshal(msg)
	return fmt.Sprintf(`{"model":"chat-tiny","messages":[{"role":"user","content":%s}],"temperature":0,"seed":7,"max_tokens":%d%s}`, b, maxTokens, extra)
}

// chatML renders one user message as chat-tiny's template does.
func chatML(msg string) string {
	return "<|im_start|>user\n" + msg + "<|im_end|>\n<|im_start|>assistant\n"
}

// tokenize asks /api/tokenize.
func (ts *testServer) tokenize(t *testing.T, text string, addSpecial bool) []int32 {
	t.Helper()
	var out struct {
		Tokens []int32 `json:"tokens"`
	}
	body, _ := json.Marshal(map[string]any{"model": "chat-tiny", "text": text, "add_special_tokens": addSpecial})
	ts.postOK(t, "/api/tokenize", string(body), &out)
	return out.Tokens
}

func (ts *testServer) detokenize(t *testing.T, ids []int32) string {
	t.Helper()
	var out struct {
		Text string `json:"text"`
	}
	body, _ := json.Marshal(map[string]any{"model": "chat-tiny", "tokens": ids})
	ts.postOK(t, "/api/detokenize", string(body), &out)
	return out.Text
}

// streamChat posts a streaming chat request and returns its frames.
func (ts *testServer) stream(t *testing.T, path, body string) []frame {
	t.Helper()
	r := ts.post(t, path, body)
	if r.Status != 200 {
		t.Fatalf("POST %s = %d %s", path, r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q, want text/event-stream", ct)
	}
	return frames(t, r.Body)
}

func TestChat(t *testing.T) {
	ts := startServer(t)
	var out chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hello there", 24, ""), &out)
	if out.Object != "chat.completion" || out.Model != "chat-tiny" || len(out.Choices) != 1 {
		t.Fatalf("response = %+v", out)
	}
	ch := out.Choices[0]
	if ch.Message.Role != "assistant" || out.text() == "" {
		t.Errorf("message = %+v, want a non-empty assistant message", ch.Message)
	}
	if ch.FinishReason != "length" && ch.FinishReason != "stop" {
		t.Errorf("finish_reason = %q", ch.FinishReason)
	}
	prompt := ts.tokenize(t, chatML("hello there"), false)
	u := out.Usage
	if u.PromptTokens != len(prompt) || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.CompletionTokens < 1 || u.CompletionTokens > 24 {
		t.Errorf("usage = %+v, want prompt_tokens %d (/api/tokenize of the rendered prompt) and a consistent total", u, len(prompt))
	}

	// The same request again gives the same greedy answer.
	var again chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hello there", 24, ""), &again)
	if again.text() != out.text() {
		t.Errorf("greedy answers differ: %q then %q", out.text(), again.text())
	}
}

func TestChatStream(t *testing.T) {
	ts := startServer(t)
	var want chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hello there", 16, ""), &want)

	fs := ts.stream(t, "/v1/chat/completions", chatBody("hello there", 16, `,"stream":true,"stream_options":{"include_usage":true}`))
	if last := fs[len(fs)-1]; last.Data != "[DONE]" {
		t.Fatalf("last frame = %q, want [DONE]", last.Data)
	}
	var (
		text   strings.Builder
		finish string
		usage  *usageBody
	)
	for i, f := range fs[:len(fs)-1] {
		var ch struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role    string  `json:"role"`
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usageBody `json:"usage"`
		}
		if err := json.Unmarshal([]byte(f.Data), &ch); err != nil {
			t.Fatalf("frame %d: %v: %s", i, err, f.Data)
		}
		if !strings.Contains(f.Data, `"usage":`) {
			t.Errorf("frame %d has no usage field (include_usage puts null on every chunk): %s", i, f.Data)
		}
		if ch.Object != "chat.completion.chunk" {
			t.Errorf("frame %d object = %q", i, ch.Object)
		}
		if i == 0 && (len(ch.Choices) != 1 || ch.Choices[0].Delta.Role != "assistant") {
			t.Errorf("first frame = %s, want the assistant role", f.Data)
		}
		if ch.Usage != nil {
			if i != len(fs)-2 || len(ch.Choices) != 0 {
				t.Errorf("frame %d: usage on a chunk that is not the last, or with choices: %s", i, f.Data)
			}
			usage = ch.Usage
			continue
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				text.WriteString(*c.Delta.Content)
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if text.String() != want.text() {
		t.Errorf("streamed text = %q, want the non-streamed %q", text.String(), want.text())
	}
	if finish != want.Choices[0].FinishReason {
		t.Errorf("finish_reason = %q, want %q", finish, want.Choices[0].FinishReason)
	}
	if usage == nil || usage.counts() != want.Usage.counts() {
		t.Errorf("usage chunk = %+v, want %+v", usage, want.Usage)
	}
}

func TestChatLogprobs(t *testing.T) {
	ts := startServer(t)
	var out chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hi", 8, `,"logprobs":true,"top_logprobs":3`), &out)
	lp := out.Choices[0].Logprobs
	if lp == nil || len(lp.Content) != out.Usage.CompletionTokens {
		t.Fatalf("logprobs = %+v, want one entry per generated token (%d)", lp, out.Usage.CompletionTokens)
	}
	for i, c := range lp.Content {
		if c.Logprob > 0 || len(c.TopLogprobs) != 3 || c.TopLogprobs[0].Logprob < c.Logprob-1e-6 {
			t.Errorf("token %d = %+v: want logprob ≤ 0, 3 alternatives, the best first (greedy picks it)", i, c)
		}
		if string(intsToBytes(c.Bytes)) != c.Token {
			t.Errorf("token %d: bytes %v do not spell %q", i, c.Bytes, c.Token)
		}
	}
}

func intsToBytes(v []int) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

// completionOut is the part of a text completion the tests read.
type completionOut struct {
	Object  string `json:"object"`
	Choices []struct {
		Text     string `json:"text"`
		Logprobs *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []float64            `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
		} `json:"logprobs"`
		FinishReason string  `json:"finish_reason"`
		TokenIDs     []int32 `json:"token_ids"`
	} `json:"choices"`
	Usage usageBody `json:"usage"`
}

func TestCompletions(t *testing.T) {
	ts := startServer(t)
	const prompt = "The capital of France is"
	var byText completionOut
	ts.postOK(t, "/v1/completions", `{"model":"chat-tiny","prompt":"`+prompt+`","max_tokens":6,"temperature":0,"logprobs":2,"return_token_ids":true}`, &byText)
	ids := ts.tokenize(t, prompt, true)
	if byText.Object != "text_completion" {
		t.Errorf("object = %q", byText.Object)
	}
	if byText.Usage.PromptTokens != len(ids) {
		t.Errorf("prompt_tokens = %d, want %d (/api/tokenize with add_special_tokens)", byText.Usage.PromptTokens, len(ids))
	}
	ch := byText.Choices[0]
	if ch.FinishReason != "length" || byText.Usage.CompletionTokens != 6 || len(ch.TokenIDs) != 6 {
		t.Fatalf("finish %q, %d completion tokens, ids %v; want length after 6", ch.FinishReason, byText.Usage.CompletionTokens, ch.TokenIDs)
	}
	if got := ts.detokenize(t, ch.TokenIDs); got != ch.Text {
		t.Errorf("detokenize(token_ids) = %q, want the text %q", got, ch.Text)
	}
	lp := ch.Logprobs
	if lp == nil || len(lp.Tokens) != 6 || len(lp.TokenLogprobs) != 6 || len(lp.TopLogprobs) != 6 {
		t.Fatalf("logprobs = %+v, want 6 of each", lp)
	}
	for i, top := range lp.TopLogprobs {
		if len(top) == 0 || len(top) > 2 || lp.TokenLogprobs[i] > 0 {
			t.Errorf("token %d: top %v, logprob %v", i, top, lp.TokenLogprobs[i])
		}
	}

	// The same prompt as token ids generates the same tokens.
	idsJSON, _ := json.Marshal(ids)
	var byIDs completionOut
	ts.postOK(t, "/v1/completions", `{"model":"chat-tiny","prompt":`+string(idsJSON)+`,"max_tokens":6,"temperature":0,"return_token_ids":true}`, &byIDs)
	if fmt.Sprint(byIDs.Choices[0].TokenIDs) != fmt.Sprint(ch.TokenIDs) || byIDs.Choices[0].Text != ch.Text {
		t.Errorf("token-id prompt generated %v %q, want %v %q", byIDs.Choices[0].TokenIDs, byIDs.Choices[0].Text, ch.TokenIDs, ch.Text)
	}
	if byIDs.Choices[0].Logprobs != nil {
		t.Errorf("logprobs present though not asked for")
	}
	// A one-element batch of ids is the same prompt.
	var nested completionOut
	ts.postOK(t, "/v1/completions", `{"prompt":[`+string(idsJSON)+`],"max_tokens":6,"temperature":0}`, &nested)
	if nested.Choices[0].Text != ch.Text {
		t.Errorf("[[ids]] prompt = %q, want %q", nested.Choices[0].Text, ch.Text)
	}
}

func TestCompletionsStream(t *testing.T) {
	ts := startServer(t)
	body := `{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`
	var want completionOut
	ts.postOK(t, "/v1/completions", strings.Replace(body, `"stream":true,"stream_options":{"include_usage":true}`, `"stream":false`, 1), &want)
	fs := ts.stream(t, "/v1/completions", body)
	var text strings.Builder
	var usage *usageBody
	for _, f := range fs[:len(fs)-1] {
		var ch completionOut
		var u struct {
			Usage *usageBody `json:"usage"`
		}
		json.Unmarshal([]byte(f.Data), &ch)
		json.Unmarshal([]byte(f.Data), &u)
		for _, c := range ch.Choices {
			text.WriteString(c.Text)
		}
		if u.Usage != nil {
			usage = u.Usage
		}
	}
	if fs[len(fs)-1].Data != "[DONE]" || text.String() != want.Choices[0].Text || usage == nil || usage.counts() != want.Usage.counts() {
		t.Errorf("stream gave %q, usage %+v; want %q, %+v, then [DONE]", text.String(), usage, want.Choices[0].Text, want.Usage)
	}
}

func TestMaxTokensLength(t *testing.T) {
	ts := startServer(t)
	for _, field := range []string{"max_tokens", "max_completion_tokens"} {
		t.Run(field, func(t *testing.T) {
			var out chatOut
			ts.postOK(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":0,"`+field+`":5}`, &out)
			prompt := ts.tokenize(t, chatML("hi"), false)
			want := usageBody{PromptTokens: len(prompt), CompletionTokens: 5, TotalTokens: len(prompt) + 5}
			if out.Choices[0].FinishReason != "length" || out.Usage.counts() != want.counts() {
				t.Errorf("finish_reason %q, usage %+v; want length, %+v", out.Choices[0].FinishReason, out.Usage, want)
			}
		})
	}
}

// counts are a usage's token counts, whatever came from the prompt cache.
func (u usageBody) counts() [3]int { return [3]int{u.PromptTokens, u.CompletionTokens, u.TotalTokens} }
