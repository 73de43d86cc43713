package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/toolcall"
)

// responseOut is the part of a Responses answer the tests read.
type responseOut struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Status            string `json:"status"`
	Model             string `json:"model"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Status    string `json:"status"`
		Role      string `json:"role"`
		Name      string `json:"name"`
		CallID    string `json:"call_id"`
		Arguments string `json:"arguments"`
		Content   []struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Annotations []any  `json:"annotations"`
		} `json:"content"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Temperature float64 `json:"temperature"`
	Store       bool    `json:"store"`
}

// text is the answer's text, as the SDKs' output_text joins it.
func (r responseOut) text() string {
	var b strings.Builder
	for _, o := range r.Output {
		for _, c := range o.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// responseVolatile matches what changes from run to run in a Responses
// answer: ids and times.
var responseVolatile = regexp.MustCompile(`"(id|item_id)":"(resp|msg|fc)_[0-9a-f]+"|"(created_at|completed_at)":\d+`)

func normalizeResponses(s string) string {
	return responseVolatile.ReplaceAllStringFunc(s, func(m string) string {
		k := m[1 : strings.Index(m[1:], `"`)+1]
		if strings.HasSuffix(k, "_at") {
			return `"` + k + `":0`
		}
		prefix := m[strings.Index(m, `:"`)+2 : strings.LastIndex(m, "_")]
		return `"` + k + `":"` + prefix + `_ID"`
	})
}

// checkResponseEvents checks a Responses stream against the order the
// SDKs rely on, and returns the text its deltas add up to and the final
// response: created and in_progress first; each item opened
// (output_item.added) before its parts and deltas and closed
// (output_item.done) before the next opens; text deltas inside an open
// content part; sequence numbers 0, 1, 2, …; one terminal event last.
func checkResponseEvents(t *testing.T, fs []frame) (string, responseOut) {
	t.Helper()
	var (
		deltas   strings.Builder
		final    responseOut
		openItem = -1
		inPart   bool
		items    int
		terminal bool
	)
	for i, f := range fs {
		var ev struct {
			Type           string          `json:"type"`
			SequenceNumber *int            `json:"sequence_number"`
			OutputIndex    int             `json:"output_index"`
			Delta          string          `json:"delta"`
			Text           string          `json:"text"`
			Item           json.RawMessage `json:"item"`
			Response       json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			t.Fatalf("event %d: %v in %s", i, err, f.Data)
		}
		if ev.Type != f.Event {
			t.Errorf("event %d: SSE event %q carries type %q", i, f.Event, ev.Type)
		}
		if ev.SequenceNumber == nil || *ev.SequenceNumber != i {
			t.Errorf("event %d (%s): sequence_number %v, want %d", i, ev.Type, ev.SequenceNumber, i)
		}
		if terminal {
			t.Errorf("event %d (%s) after the terminal event", i, ev.Type)
		}
		want := map[int]string{0: "response.created", 1: "response.in_progress"}[i]
		if want != "" && ev.Type != want {
			t.Errorf("event %d is %s, want %s", i, ev.Type, want)
		}
		switch ev.Type {
		case "response.created", "response.in_progress":
			if i > 1 {
				t.Errorf("event %d: %s after the start", i, ev.Type)
			}
		case "response.output_item.added":
			if openItem >= 0 || ev.OutputIndex != items {
				t.Errorf("event %d: item %d added while item %d is open (%d done)", i, ev.OutputIndex, openItem, items)
			}
			openItem = ev.OutputIndex
		case "response.content_part.added":
			if openItem != ev.OutputIndex || inPart {
				t.Errorf("event %d: a part added to item %d (open: %d)", i, ev.OutputIndex, openItem)
			}
			inPart = true
		case "response.output_text.delta":
			if !inPart || openItem != ev.OutputIndex {
				t.Errorf("event %d: a text delta outside an open part", i)
			}
			deltas.WriteString(ev.Delta)
		case "response.output_text.done", "response.function_call_arguments.delta", "response.function_call_arguments.done":
			if openItem != ev.OutputIndex {
				t.Errorf("event %d: %s for item %d (open: %d)", i, ev.Type, ev.OutputIndex, openItem)
			}
		case "response.content_part.done":
			if !inPart {
				t.Errorf("event %d: a part closed that is not open", i)
			}
			inPart = false
		case "response.output_item.done":
			if openItem != ev.OutputIndex || inPart {
				t.Errorf("event %d: item %d done (open: %d, part open: %v)", i, ev.OutputIndex, openItem, inPart)
			}
			openItem = -1
			items++
		case "response.completed", "response.incomplete", "response.failed":
			terminal = true
			if err := json.Unmarshal(ev.Response, &final); err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
		default:
			t.Errorf("event %d: unknown type %q", i, ev.Type)
		}
	}
	if !terminal {
		t.Errorf("the stream has no terminal event")
	}
	if openItem >= 0 {
		t.Errorf("item %d is never done", openItem)
	}
	return deltas.String(), final
}

// responsesBody is a greedy Responses request.
func responsesBody(input string, maxTokens int, extra string) string {
	b, _ := json.Marshal(input)
	return fmt.Sprintf(`{"model":"chat-tiny","input":%s,"temperature":0,"max_output_tokens":%d%s}`, b, maxTokens, extra)
}

// TestResponses: a plain answer has the Responses shape and the same text
// and token counts as the chat route gives the same conversation; the
// stream's events come in the SDKs' order and add up to the same answer.
func TestResponses(t *testing.T) {
	ts := startServer(t)
	var chat chatOut
	ts.postOK(t, "/v1/chat/completions", `{"model":"chat-tiny","temperature":0,"max_tokens":6,"messages":[`+
		`{"role":"system","content":"Be brief."},{"role":"user","content":"hello there"}]}`, &chat)

	var out responseOut
	ts.postOK(t, "/v1/responses", responsesBody("hello there", 6, `,"instructions":"Be brief."`), &out)
	if out.Object != "response" || !strings.HasPrefix(out.ID, "resp_") || out.Model != "chat-tiny" || out.Store || len(out.Output) != 1 {
		t.Fatalf("response = %+v", out)
	}
	item := out.Output[0]
	if item.Type != "message" || item.Role != "assistant" || len(item.Content) != 1 || item.Content[0].Type != "output_text" || item.Content[0].Annotations == nil {
		t.Errorf("output[0] = %+v, want an assistant message with one output_text", item)
	}
	if out.text() != chat.text() || out.Usage.InputTokens != chat.Usage.PromptTokens || out.Usage.OutputTokens != chat.Usage.CompletionTokens ||
		out.Usage.TotalTokens != out.Usage.InputTokens+out.Usage.OutputTokens {
		t.Errorf("response %q %+v, chat %q %+v: want the same answer and counts", out.text(), out.Usage, chat.text(), chat.Usage)
	}
	wantStatus, wantItem := "completed", "completed"
	if chat.Choices[0].FinishReason == "length" {
		wantStatus, wantItem = "incomplete", "incomplete"
		if out.IncompleteDetails == nil || out.IncompleteDetails.Reason != "max_output_tokens" {
			t.Errorf("incomplete_details = %+v, want max_output_tokens", out.IncompleteDetails)
		}
	}
	if out.Status != wantStatus || item.Status != wantItem {
		t.Errorf("status %q, item status %q; want %q, %q", out.Status, item.Status, wantStatus, wantItem)
	}

	fs := ts.stream(t, "/v1/responses", responsesBody("hello there", 6, `,"instructions":"Be brief.","stream":true`))
	deltas, final := checkResponseEvents(t, fs)
	if deltas != out.text() || final.text() != out.text() || final.Status != out.Status || final.Usage != out.Usage {
		t.Errorf("stream: deltas %q, final %q %s %+v; want %q %s %+v", deltas, final.text(), final.Status, final.Usage, out.text(), out.Status, out.Usage)
	}

	// A list of input items: the same conversation, the same prompt.
	var items responseOut
	ts.postOK(t, "/v1/responses", `{"model":"chat-tiny","temperature":0,"max_output_tokens":6,"input":[`+
		`{"role":"developer","content":"Be brief."},{"type":"message","role":"user","content":[{"type":"input_text","text":"hello there"}]}]}`, &items)
	if items.Usage.InputTokens != out.Usage.InputTokens || items.text() != out.text() {
		t.Errorf("input items: %q %+v, want %q %+v", items.text(), items.Usage, out.text(), out.Usage)
	}
}

// TestResponsesToolRoundTrip sends a function tool and a finished call
// with its output: the prompt the model sees must be what the chat route
// renders of the same conversation.
func TestResponsesToolRoundTrip(t *testing.T) {
	ts := startServer(t, func(c *serverConfig) { c.model = toolModel(t) })
	const params = `{"type":"object","properties":{"city":{"type":"string"}}}`
	responses := `{"model":"chat-tiny","max_output_tokens":2,"temperature":0,` +
		`"tools":[{"type":"function","name":"get_weather","description":"d","parameters":` + params + `}],"input":[
		{"role":"user","content":"Weather in Paris?"},
		{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call_output","call_id":"c1","output":"22C"}]}`
	chat := `{"model":"chat-tiny","max_tokens":2,"temperature":0,` +
		`"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":` + params + `}}],"messages":[
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"c1","name":"get_weather","content":"22C"}]}`
	rendered := "<|im_start|>system\nget_weather\n<|im_end|>\n" +
		"<|im_start|>user\nWeather in Paris?<|im_end|>\n" +
		"<|im_start|>assistant\n<tool_call>get_weather(Paris)</tool_call><|im_end|>\n" +
		"<|im_start|>tool\nget_weather: 22C<|im_end|>\n" +
		"<|im_start|>assistant\n"
	want := len(ts.tokenize(t, rendered, false))
	var r responseOut
	ts.postOK(t, "/v1/responses", responses, &r)
	var c chatOut
	ts.postOK(t, "/v1/chat/completions", chat, &c)
	if r.Usage.InputTokens != want || c.Usage.PromptTokens != want {
		t.Errorf("input_tokens %d, chat prompt_tokens %d; want %d (the conversation rendered with its call and output)", r.Usage.InputTokens, c.Usage.PromptTokens, want)
	}
	// tool_choice none withholds the tools: no tool list in the prompt.
	var none responseOut
	ts.postOK(t, "/v1/responses", strings.Replace(responses, `"tools":`, `"tool_choice":"none","tools":`, 1), &none)
	if none.Usage.InputTokens >= want {
		t.Errorf("tool_choice none: input_tokens %d, want fewer than %d", none.Usage.InputTokens, want)
	}
}

// TestResponsesConversation: input items become the chat conversation the
// template takes.
func TestResponsesConversation(t *testing.T) {
	sys := "Be brief."
	tests := []struct {
		name, input string
		instr       *string
		want        string
	}{
		{"string", `"hi"`, &sys, `[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]`},
		{"roles and parts", `[{"role":"developer","content":"d"},{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},` +
			`{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"c","annotations":[]}]}]`, nil,
			`[{"role":"system","content":"d"},{"role":"user","content":"a\nb"},{"role":"assistant","content":"c"}]`},
		{"calls join the assistant message", `[{"role":"user","content":"q"},{"role":"assistant","content":"let me see"},` +
			`{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"x\":1}"},{"type":"function_call","call_id":"c2","name":"g","arguments":""},` +
			`{"type":"reasoning","id":"rs_1","summary":[]},` +
			`{"type":"function_call_output","call_id":"c1","output":"one"},{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"two"}]}]`, nil,
			`[{"role":"user","content":"q"},{"role":"assistant","content":"let me see","tool_calls":[` +
				`{"id":"c1","type":"function","function":{"name":"f","arguments":{"x":1}}},{"id":"c2","type":"function","function":{"name":"g","arguments":{}}}]},` +
				`{"role":"tool","tool_call_id":"c1","name":"f","content":"one"},{"role":"tool","tool_call_id":"c2","name":"g","content":"two"}]`},
		{"a call with no message before", `[{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}]`, nil,
			`[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := responsesConversation(tt.instr, json.RawMessage(tt.input))
			if err != nil || string(got) != tt.want {
				t.Errorf("responsesConversation(%s) = %s, %v\nwant %s", tt.input, got, err, tt.want)
			}
		})
	}
}

// TestResponsesGoldens drives the Responses writers with scripted deltas:
// tool calls (which chat-tiny cannot make), the first call only when
// parallel_tool_calls is false, an answer cut at max_output_tokens, and a
// failure mid-stream.
func TestResponsesGoldens(t *testing.T) {
	base := func() responseObject {
		job, err := parseResponses([]byte(`{"input":"hi","tools":[{"type":"function","name":"get_weather"},{"type":"function","name":"get_time"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		r := job.echo
		r.ID, r.Object, r.CreatedAt, r.Status, r.Model, r.Output, r.Temperature, r.TopP = "resp_0", "response", 1, "in_progress", "m", []any{}, 1, 1
		return r
	}
	cut := script{deltas: []engine.Delta{{Content: "Once upon"}, {Content: " a time"}}, usage: engine.Usage{PromptTokens: 4, CompletionTokens: 3, FinishReason: "length"}}
	textAfterCall := script{deltas: []engine.Delta{
		{ToolCalls: []toolcall.Call{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{Content: "Done."},
	}, usage: engine.Usage{PromptTokens: 4, CompletionTokens: 9, FinishReason: "stop"}}
	empty := script{usage: engine.Usage{PromptTokens: 4, CompletionTokens: 1, FinishReason: "stop"}}
	tests := []struct {
		golden string
		g      generator
		job    responsesJob
	}{
		{"responses_tools.golden", toolScript, responsesJob{}},
		{"responses_tools_stream.golden", toolScript, responsesJob{stream: true}},
		{"responses_one_call.golden", toolScript, responsesJob{maxCalls: 1}},
		{"responses_text_after_call_stream.golden", textAfterCall, responsesJob{stream: true}},
		{"responses_incomplete_stream.golden", cut, responsesJob{stream: true}},
		{"responses_empty.golden", empty, responsesJob{}},
		{"responses_fail_stream.golden", failScript, responsesJob{stream: true}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got := record(t, "/v1/responses", func(s *Server, c echo.Context) error { return s.answerResponses(c, tt.g, &tt.job, base()) })
			got = normalizeResponses(got)
			golden(t, tt.golden, got)
			if tt.job.stream {
				body := got[strings.Index(got, "\n")+1:]
				checkResponseEvents(t, frames(t, []byte(body)))
			}
		})
	}
}

// TestResponsesErrors: what the API cannot do is refused, naming the
// field (the bodies are in testdata/errors.golden, from errorCases).
func TestResponsesErrors(t *testing.T) {
	ts := startServer(t)
	for _, tc := range []struct{ body, param string }{
		{`{"input":"hi","previous_response_id":"resp_1"}`, "previous_response_id"},
		{`{"input":"hi","store":true}`, "store"},
		{`{"input":"hi","background":true}`, "background"},
		{`{"input":"hi","conversation":"conv_1"}`, "conversation"},
		{`{"input":"hi","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{`{"input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].type"},
		{`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:,"}]}]}`, "input[0].content[0]"},
		{`{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"string","pattern":"\\bx"}}}}`, "text.format.schema"},
		{`{"input":"hi","text":{"format":{"type":"json_schema","name":"x"}}}`, "text.format.schema"},
		{`{"input":"hi","truncation":"auto"}`, "truncation"},
		{`{"input":"hi","include":["everything"]}`, "include[0]"},
		{`{"input":"hi","max_output_tokens":1000}`, "max_output_tokens"},
		{`{"input":"hi","tools":[{"type":"function","name":"f"}]}`, "tools"},
		{`{"input":"hi","tool_choice":"required"}`, "tool_choice"},
		{`{"input":"hi","temperature":2.5}`, "temperature"},
		{`{}`, "input"},
	} {
		r := ts.post(t, "/v1/responses", tc.body)
		var e openAIError
		if r.Status != http.StatusBadRequest || json.Unmarshal(r.Body, &e) != nil || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Errorf("POST /v1/responses %s = %d %s, want 400 naming %s", tc.body, r.Status, r.Body, tc.param)
		}
	}
	// store false and the accepted-but-inert fields are fine.
	var out responseOut
	ts.postOK(t, "/v1/responses", responsesBody("hi", 2, `,"store":false,"include":["reasoning.encrypted_content"],"metadata":{"k":"v"},"text":{"format":{"type":"text"},"verbosity":"low"},"reasoning":{"effort":"low","summary":"auto"},"parallel_tool_calls":false`), &out)
	if out.Status == "" || out.Store {
		t.Errorf("response = %+v", out)
	}
}

// FuzzResponsesRequest: the Responses decoder never panics, refuses bad
// input with a 400, and turns what it accepts into a conversation and
// tools the chat route itself accepts.
func FuzzResponsesRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi","instructions":"be brief","max_output_tokens":5,"temperature":0.5,"top_p":0.9}`,
		`{"input":[{"role":"developer","content":"d"},{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"b","annotations":[]}]}]}`,
		`{"input":[{"role":"user","content":"q"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"x\":1}"},{"type":"function_call_output","call_id":"c1","output":"ok"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"auto","parallel_tool_calls":false}`,
		`{"input":"x","include":["message.output_text.logprobs"],"top_logprobs":3,"text":{"format":{"type":"json_object"}},"reasoning":{"effort":"low"}}`,
		`{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{oops"}]}`,
		`{"input":[{"type":"reasoning","summary":[]},{"type":"item_reference","id":"x"}]}`,
		`{"input":"hi","store":true,"previous_response_id":"r"}`,
		`{"input":[]}`,
		`{"input":[1]}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"what?"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"auto"}]}]}`,
		`{"input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		job, err := parseResponses(body)
		if err != nil {
			if p := classify(err); p.Status != 400 {
				t.Fatalf("error %v classifies as %d, want 400", err, p.Status)
			}
			return
		}
		checkConverted(t, job.req.Messages, job.media)
		if err := validateTools(job.req.Tools); err != nil {
			t.Fatalf("the tools %s are not ones the chat route takes: %v", job.req.Tools, err)
		}
		if job.req.MaxTokens < 0 || job.req.TopLogprobs < 0 || job.req.TopLogprobs > maxTopLogprobs {
			t.Fatalf("accepted limits %+v", job.req)
		}
		if err := job.req.Sample.Validate(); err != nil {
			t.Fatalf("accepted sampling options the engine refuses: %v", err)
		}
		if _, err := json.Marshal(job.echo); err != nil {
			t.Fatalf("the response's echo does not marshal: %v", err)
		}
	})
}
