package web

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
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
