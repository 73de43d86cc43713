package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"hearth/engine/pool"
	"hearth/internal/testmodels"
)

// schemaBody is a small schema every route's answer must fit.
const schemaBody = `{"type":"object","properties":{"city":{"type":"string","maxLength":10},"n":{"type":"integer","minimum":0,"maximum":9}},"required":["city","n"]}`

func checkCity(t *testing.T, route, text string) {
	t.Helper()
	var out struct {
		City *string `json:"city"`
		N    *int    `json:"n"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil || out.City == nil || out.N == nil || *out.N > 9 || len([]rune(*out.City)) > 10 {
		t.Errorf("%s: %q does not fit the schema (%v)", route, text, err)
	}
}

// TestStructuredOutput: the OpenAI json_schema, the Responses text.format
// and Ollama's format schema each give an answer that parses and fits
// the schema, from a tiny model that was never taught JSON; json_object
// gives an object.
func TestStructuredOutput(t *testing.T) {
	ts := startServer(t)
	var chat struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	for _, temp := range []string{"0", "1"} {
		ts.postOK(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"Where?"}],"temperature":`+temp+`,"seed":7,"max_tokens":80,
			"response_format":{"type":"json_schema","json_schema":{"name":"place","strict":true,"schema":`+schemaBody+`}}}`, &chat)
		checkCity(t, "chat, temperature "+temp, chat.Choices[0].Message.Content)
		if chat.Choices[0].FinishReason != "stop" {
			t.Errorf("chat: finish %s", chat.Choices[0].FinishReason)
		}
	}

	var resp struct {
		Output []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	ts.postOK(t, "/v1/responses", `{"input":"Where?","max_output_tokens":80,"text":{"format":{"type":"json_schema","name":"place","schema":`+schemaBody+`}}}`, &resp)
	checkCity(t, "responses", resp.Output[0].Content[0].Text)

	var ollama struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	ts.postOK(t, "/api/chat", `{"messages":[{"role":"user","content":"Where?"}],"stream":false,"options":{"num_predict":80},"format":`+schemaBody+`}`, &ollama)
	checkCity(t, "ollama", ollama.Message.Content)

	// Ollama's "json": any object; strings are unbounded, so allow a
	// budget cut, but the text must be an object's start.
	ts.postOK(t, "/api/chat", `{"messages":[{"role":"user","content":"Where?"}],"stream":false,"options":{"num_predict":60,"temperature":0},"format":"json"}`, &ollama)
	if !strings.HasPrefix(ollama.Message.Content, "{") {
		t.Errorf("ollama json: %q", ollama.Message.Content)
	}
}

// TestMetricsEndpoint: GET /metrics counts requests by model, route and
// status, and the tokens of generations.
func TestMetricsEndpoint(t *testing.T) {
	ts := startServer(t)
	var out map[string]any
	ts.postOK(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`, &out)
	ts.post(t, "/v1/chat/completions", `{"messages":"nope"}`)
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`hearth_requests_total{code="200",model="chat-tiny",route="/v1/chat/completions"} 1`,
		`hearth_requests_total{code="400",model="",route="/v1/chat/completions"} 1`,
		`hearth_completion_tokens_total{model="chat-tiny"} 3`,
		`hearth_time_to_first_token_seconds_count{model="chat-tiny"} 1`,
		`hearth_queue_requests{model="chat-tiny"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %s in /metrics:\n%s", want, text)
		}
	}
}

// TestForcedToolCall: tool_choice "required" (OpenAI) and {"type":
// "tool"} (Anthropic) make the answer a call whose arguments follow the
// tool's schema, from a model with a Hermes tool-call template.
func TestForcedToolCall(t *testing.T) {
	tmpl := "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if tools %}<tool_call>{% endif %}<|im_start|>assistant\n"
	ts := startServer(t, func(c *serverConfig) {
		c.model = pool.Model{ID: "chat-hermes", Dir: testmodels.WithTemplate(t, "chat-tiny", tmpl)}
	})
	tool := `{"type":"function","function":{"name":"add","parameters":{"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":9},"b":{"type":"integer","minimum":0,"maximum":9}},"required":["a","b"],"additionalProperties":false}}}`
	var out struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"add"}}`} {
		ts.postOK(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"2+3?"}],"max_tokens":200,"tools":[`+tool+`],"tool_choice":`+choice+`}`, &out)
		c := out.Choices[0]
		if len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "add" || c.FinishReason != "tool_calls" {
			t.Fatalf("tool_choice %s: %+v", choice, c)
		}
		var args struct{ A, B *int }
		if err := json.Unmarshal([]byte(c.Message.ToolCalls[0].Function.Arguments), &args); err != nil || args.A == nil || args.B == nil || *args.A > 9 {
			t.Errorf("arguments %q: %v", c.Message.ToolCalls[0].Function.Arguments, err)
		}
	}
	var msg struct {
		Content []struct {
			Type  string         `json:"type"`
			Name  string         `json:"name"`
			Input map[string]int `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	ts.postOK(t, "/v1/messages", `{"max_tokens":200,"messages":[{"role":"user","content":"2+3?"}],"tools":[{"name":"add","input_schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}}],"tool_choice":{"type":"tool","name":"add"}}`, &msg)
	if len(msg.Content) == 0 || msg.Content[len(msg.Content)-1].Type != "tool_use" || msg.StopReason != "tool_use" {
		t.Errorf("anthropic forced tool: %+v", msg)
	}
}

// TestOllamaLogprobs: /api/chat and /api/generate return each token's
// log probability and the alternatives when asked, streamed and whole,
// and the streamed ones are the whole answer's.
func TestOllamaLogprobs(t *testing.T) {
	ts := startServer(t)
	type lp struct {
		Token       string  `json:"token"`
		Logprob     float64 `json:"logprob"`
		Bytes       []int   `json:"bytes"`
		TopLogprobs []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
		} `json:"top_logprobs"`
	}
	var whole struct {
		Response  string `json:"response"`
		EvalCount int    `json:"eval_count"`
		Logprobs  []lp   `json:"logprobs"`
	}
	ts.postOK(t, "/api/generate", `{"prompt":"hi","stream":false,"logprobs":true,"top_logprobs":3,"options":{"temperature":0,"num_predict":6}}`, &whole)
	if len(whole.Logprobs) != whole.EvalCount || whole.EvalCount == 0 {
		t.Fatalf("%d logprobs for %d tokens", len(whole.Logprobs), whole.EvalCount)
	}
	var text strings.Builder
	for _, l := range whole.Logprobs {
		text.WriteString(l.Token)
		if l.Logprob > 0 || len(l.TopLogprobs) != 3 || l.TopLogprobs[0].Logprob < l.Logprob-1e-6 || len(l.Bytes) != len(l.Token) {
			t.Errorf("logprob %+v", l)
		}
	}
	if !strings.HasPrefix(text.String(), whole.Response) && !strings.HasPrefix(whole.Response, text.String()) {
		t.Errorf("tokens %q, response %q", text.String(), whole.Response)
	}
	r := ts.post(t, "/api/chat", `{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"options":{"temperature":0,"num_predict":6}}`)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(r.Body)), "\n") {
		var f struct {
			Logprobs []lp `json:"logprobs"`
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatal(err)
		}
		n += len(f.Logprobs)
	}
	if n != 6 {
		t.Errorf("a streamed chat gave %d logprobs for 6 tokens", n)
	}
	if r := ts.post(t, "/api/generate", `{"prompt":"hi","top_logprobs":99}`); r.Status != http.StatusBadRequest {
		t.Errorf("top_logprobs 99: %d", r.Status)
	}
}
