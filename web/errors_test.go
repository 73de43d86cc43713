package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// errorCases are requests that must fail, each with its status; the
// bodies are in testdata/errors.golden.
var errorCases = []struct {
	name   string
	method string
	path   string
	body   string
	header map[string]string
	status int
}{
	{"malformed JSON", "POST", "/v1/chat/completions", `{"messages": [`, nil, 400},
	{"body not an object", "POST", "/v1/chat/completions", `[1,2]`, nil, 400},
	{"empty body", "POST", "/v1/chat/completions", ``, nil, 400},
	{"unknown model", "POST", "/v1/chat/completions", `{"model":"no-such/model","messages":[{"role":"user","content":"hi"}]}`, nil, 404},
	{"empty messages", "POST", "/v1/chat/completions", `{"messages":[]}`, nil, 400},
	{"missing messages", "POST", "/v1/chat/completions", `{"model":"chat-tiny"}`, nil, 400},
	{"messages not an array", "POST", "/v1/chat/completions", `{"messages":"hi"}`, nil, 400},
	{"unknown role", "POST", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"hi"}]}`, nil, 400},
	{"missing content", "POST", "/v1/chat/completions", `{"messages":[{"role":"user"}]}`, nil, 400},
	{"context overflow", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1000}`, nil, 400},
	{"prompt longer than context", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("hello ", 300) + `"}]}`, nil, 400},
	{"temperature out of range", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":3}`, nil, 400},
	{"temperature wrong type", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"temperature":"hot"}`, nil, 400},
	{"top_p out of range", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"top_p":1.5}`, nil, 400},
	{"n over the limit", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"n":17}`, nil, 400},
	{"max_tokens zero", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":0}`, nil, 400},
	{"max_tokens wrong type", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":"ten"}`, nil, 400},
	{"seed not an integer", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"seed":1.5}`, nil, 400},
	{"stream_options without stream", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`, nil, 400},
	{"include_usage wrong type", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":"yes"}}`, nil, 400},
	{"top_logprobs without logprobs", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`, nil, 400},
	{"logit_bias", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"logit_bias":{"42":5}}`, nil, 400},
	{"tools on a model without tool calls", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`, nil, 400},
	{"tool not a function", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"retrieval"}]}`, nil, 400},
	{"tool_choice required without tools", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`, nil, 400},
	{"tool_choice of a tool not offered", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, nil, 400},
	{"response_format json_schema", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema"}}`, nil, 400},
	{"json_object without JSON in the messages", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`, nil, 400},
	{"json_schema the grammar cannot express", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","patternProperties":{"a":{}}}}}}`, nil, 400},
	{"ollama format of a bad schema", "POST", "/api/chat", `{"model":"chat-tiny","messages":[{"role":"user","content":"hi"}],"format":{"type":"string","format":"hostname"},"stream":false}`, nil, 400},
	{"image content", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, nil, 400},
	{"tool call arguments not JSON", "POST", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{oops"}}]}]}`, nil, 400},
	{"completions batch", "POST", "/v1/completions", `{"prompt":["a","b"]}`, nil, 400},
	{"completions token outside vocabulary", "POST", "/v1/completions", `{"prompt":[1,99999],"max_tokens":2}`, nil, 400},
	{"completions token not an integer", "POST", "/v1/completions", `{"prompt":[1.5]}`, nil, 400},
	{"completions missing prompt", "POST", "/v1/completions", `{"max_tokens":2}`, nil, 400},
	{"completions echo negative max_tokens", "POST", "/v1/completions", `{"prompt":"hi","echo":true,"max_tokens":-1}`, nil, 400},
	{"messages malformed JSON", "POST", "/v1/messages", `{"max_tokens":`, nil, 400},
	{"messages missing max_tokens", "POST", "/v1/messages", `{"messages":[{"role":"user","content":"hi"}]}`, nil, 400},
	{"messages unknown model", "POST", "/v1/messages", `{"model":"claude-nope","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil, 404},
	{"messages system role", "POST", "/v1/messages", `{"max_tokens":5,"messages":[{"role":"system","content":"hi"}]}`, nil, 400},
	{"messages temperature above 1", "POST", "/v1/messages", `{"max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"hi"}]}`, nil, 400},
	{"messages image block", "POST", "/v1/messages", `{"max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`, nil, 400},
	{"messages context overflow", "POST", "/v1/messages", `{"max_tokens":5000,"messages":[{"role":"user","content":"hi"}]}`, nil, 400},
	{"messages tool_choice any without tools", "POST", "/v1/messages", `{"max_tokens":5,"tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`, nil, 400},
	{"ollama chat malformed JSON", "POST", "/api/chat", `{"messages": [`, nil, 400},
	{"ollama chat unknown model", "POST", "/api/chat", `{"model":"no-such/model","messages":[{"role":"user","content":"hi"}]}`, nil, 404},
	{"ollama generate unknown model", "POST", "/api/generate", `{"model":"no-such/model","prompt":"hi"}`, nil, 404},
	{"ollama chat images", "POST", "/api/chat", `{"messages":[{"role":"user","content":"what is this?","images":["iVBORw0KGgo="]}]}`, nil, 400},
	{"ollama generate images", "POST", "/api/generate", `{"prompt":"what is this?","images":["iVBORw0KGgo="]}`, nil, 400},
	{"ollama format unknown", "POST", "/api/generate", `{"prompt":"hi","format":"yaml"}`, nil, 400},
	{"ollama template", "POST", "/api/generate", `{"prompt":"hi","template":"{{ .Prompt }}"}`, nil, 400},
	{"ollama suffix", "POST", "/api/generate", `{"prompt":"def f(","suffix":"return x"}`, nil, 400},
	{"ollama context", "POST", "/api/generate", `{"prompt":"hi","context":[1,2,3]}`, nil, 400},
	{"ollama raw with system", "POST", "/api/generate", `{"prompt":"hi","raw":true,"system":"s"}`, nil, 400},
	{"ollama option wrong type", "POST", "/api/chat", `{"messages":[{"role":"user","content":"hi"}],"options":{"temperature":"hot"}}`, nil, 400},
	{"ollama repeat_penalty zero", "POST", "/api/chat", `{"messages":[{"role":"user","content":"hi"}],"options":{"repeat_penalty":0}}`, nil, 400},
	{"ollama top_p out of range", "POST", "/api/generate", `{"prompt":"hi","options":{"top_p":2}}`, nil, 400},
	{"ollama think", "POST", "/api/chat", `{"messages":[{"role":"user","content":"hi"}],"think":"very"}`, nil, 400},
	{"ollama keep_alive", "POST", "/api/chat", `{"messages":[{"role":"user","content":"hi"}],"keep_alive":"soon"}`, nil, 400},
	{"ollama context overflow", "POST", "/api/chat", `{"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":1000}}`, nil, 400},
	{"ollama tools on a model without tool calls", "POST", "/api/chat", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}`, nil, 400},
	{"ollama unknown role", "POST", "/api/chat", `{"messages":[{"role":"wizard","content":"hi"}]}`, nil, 400},
	{"ollama wrong method", "GET", "/api/chat", ``, nil, 405},
	{"tokenize unknown model", "POST", "/api/tokenize", `{"model":"nope","text":"hi"}`, nil, 404},
	{"detokenize outside vocabulary", "POST", "/api/detokenize", `{"tokens":[1,512]}`, nil, 400},
	{"responses malformed JSON", "POST", "/v1/responses", `{"input":`, nil, 400},
	{"responses unknown model", "POST", "/v1/responses", `{"model":"no-such/model","input":"hi"}`, nil, 404},
	{"responses missing input", "POST", "/v1/responses", `{"model":"chat-tiny"}`, nil, 400},
	{"responses input wrong type", "POST", "/v1/responses", `{"input":42}`, nil, 400},
	{"responses previous_response_id", "POST", "/v1/responses", `{"input":"hi","previous_response_id":"resp_1"}`, nil, 400},
	{"responses store", "POST", "/v1/responses", `{"input":"hi","store":true}`, nil, 400},
	{"responses built-in tool", "POST", "/v1/responses", `{"input":"hi","tools":[{"type":"web_search_preview"}]}`, nil, 400},
	{"responses item_reference", "POST", "/v1/responses", `{"input":[{"type":"item_reference","id":"msg_1"}]}`, nil, 400},
	{"responses image part", "POST", "/v1/responses", `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:,"}]}]}`, nil, 400},
	{"responses function_call without call_id", "POST", "/v1/responses", `{"input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, nil, 400},
	{"responses context overflow", "POST", "/v1/responses", `{"input":"hi","max_output_tokens":1000}`, nil, 400},
	{"responses prompt longer than context", "POST", "/v1/responses", `{"input":"` + strings.Repeat("hello ", 300) + `"}`, nil, 400},
	{"responses tools on a model without tool calls", "POST", "/v1/responses", `{"input":"hi","tools":[{"type":"function","name":"f","parameters":{}}]}`, nil, 400},
	{"responses wrong method", "GET", "/v1/responses", ``, nil, 405},
	{"count_tokens malformed JSON", "POST", "/v1/messages/count_tokens", `{"messages":`, nil, 400},
	{"count_tokens unknown model", "POST", "/v1/messages/count_tokens", `{"model":"claude-nope","messages":[{"role":"user","content":"hi"}]}`, nil, 404},
	{"count_tokens missing messages", "POST", "/v1/messages/count_tokens", `{"model":"chat-tiny"}`, nil, 400},
	{"count_tokens prompt longer than context", "POST", "/v1/messages/count_tokens", `{"messages":[{"role":"user","content":"` + strings.Repeat("hello ", 300) + `"}]}`, nil, 400},
	{"count_tokens tools on a model without tool calls", "POST", "/v1/messages/count_tokens", `{"tools":[{"name":"f","input_schema":{}}],"messages":[{"role":"user","content":"hi"}]}`, nil, 400},
	{"ollama delete unknown model", "DELETE", "/api/delete", `{"model":"no-such/model"}`, nil, 404},
	{"ollama delete the server's model", "DELETE", "/api/delete", `{"name":"chat-tiny"}`, nil, 400},
	{"ollama delete without a name", "DELETE", "/api/delete", `{}`, nil, 400},
	{"ollama delete wrong method", "POST", "/api/delete", `{"model":"chat-tiny"}`, nil, 405},
	{"ollama copy unknown model", "POST", "/api/copy", `{"source":"no-such/model","destination":"x"}`, nil, 404},
	{"ollama copy without a destination", "POST", "/api/copy", `{"source":"chat-tiny"}`, nil, 400},
	{"cross-origin", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Origin": "http://evil.example"}, 403},
	{"cross-origin messages", "POST", "/v1/messages", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Origin": "http://evil.example"}, 403},
	{"cross-origin preflight", "OPTIONS", "/v1/chat/completions", ``, map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}, 403},
	{"rebinding host", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Host": "evil.example"}, 403},
	{"rebinding host on api", "GET", "/api/ps", ``, map[string]string{"Host": "attacker.example:11435"}, 403},
	{"oversized body", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`, nil, 413},
	{"unknown route", "GET", "/v1/nothing", ``, nil, 404},
	{"unknown route, POST", "POST", "/v1/nothing", `{}`, nil, 404},
	{"unknown Ollama route, POST", "POST", "/api/nothing", `{}`, nil, 404},
	{"wrong method", "GET", "/v1/chat/completions", ``, nil, 405},
	{"unknown model id", "GET", "/v1/models/no/such", ``, nil, 404},
}

// smallBodies is the body limit of the error tests' server.
func smallBodies(c *serverConfig) { c.opt.MaxBodyBytes = 64 << 10 }

func TestErrors(t *testing.T) {
	ts := startServer(t, smallBodies)
	var gold strings.Builder
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.do(t, tc.method, tc.path, tc.body, tc.header)
			if r.Status != tc.status {
				t.Errorf("%s %s = %d %s, want %d", tc.method, tc.path, r.Status, r.Body, tc.status)
			}
			fmt.Fprintf(&gold, "=== %s\n%s %s\n%d %s\n\n", tc.name, tc.method, tc.path, r.Status, strings.TrimSpace(string(r.Body)))
		})
	}
	golden(t, "errors.golden", gold.String())
}

// TestOversizedChunkedBody sends a body without Content-Length, so the
// limit trips while reading.
func TestOversizedChunkedBody(t *testing.T) {
	ts := startServer(t, smallBodies)
	body := io.MultiReader(strings.NewReader(`{"messages":[{"role":"user","content":"`), strings.NewReader(strings.Repeat("x", 70<<10)), strings.NewReader(`"}]}`))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions", body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 413 || !strings.Contains(string(b), "larger than 65536 bytes") {
		t.Errorf("status %d %s, want 413 naming the limit", resp.StatusCode, b)
	}
}

// TestErrorBodiesHaveNoGoInternals reads the golden bodies: they carry
// messages, not Go type names or decoder jargon.
func TestErrorBodiesHaveNoGoInternals(t *testing.T) {
	gold, err := os.ReadFile(filepath.Join("testdata", "errors.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"*engine.", "*web.", "json: cannot", "runtime error", "goroutine ", "Go value"} {
		if strings.Contains(string(gold), bad) {
			t.Errorf("an error body contains %q", bad)
		}
	}
}
