package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"hearth/engine"
	"hearth/engine/toolcall"
)

// script is a generator that plays fixed deltas: it drives the response
// writers through what chat-tiny cannot produce (tool calls, a failure
// mid-stream).
type script struct {
	deltas []engine.Delta
	usage  engine.Usage
	err    error
}

func (s script) Generate(ctx context.Context, req engine.Request, emit func(engine.Delta) error) (engine.Usage, error) {
	for _, d := range s.deltas {
		if err := emit(d); err != nil {
			return engine.Usage{}, err
		}
	}
	return s.usage, s.err
}

var toolScript = script{
	deltas: []engine.Delta{
		{Content: "Let me check."},
		{ToolCalls: []toolcall.Call{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`}}},
		{ToolCalls: []toolcall.Call{{ID: "call_2", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`}}},
	},
	usage: engine.Usage{PromptTokens: 30, CompletionTokens: 21, FinishReason: "tool_calls"},
}

var failScript = script{
	deltas: []engine.Delta{{Content: "Hel"}},
	usage:  engine.Usage{PromptTokens: 5, CompletionTokens: 1},
	err:    &engine.RequestError{Err: errors.New("chat template: something the request caused")},
}

// record runs one answer writer against a recorder.
func record(t *testing.T, path string, run func(s *Server, c echo.Context) error) string {
	t.Helper()
	s := New(Options{Version: "test"})
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodPost, path, nil), rec)
	if err := run(s, c); err != nil {
		s.handleError(err, c)
	}
	return fmt.Sprintf("%d %s\n%s", rec.Code, rec.Header().Get("Content-Type"), normalize(rec.Body.String()))
}

func chatBase() chatChunk {
	return chatChunk{ID: "chatcmpl-x", Object: "chat.completion.chunk", Created: 1, Model: "m", SystemFingerprint: "hearth-test"}
}

func msgBase() messageBody {
	return messageBody{ID: "msg_x", Type: "message", Role: "assistant", Model: "m", Content: []contentBlock{}}
}

func TestToolCallResponses(t *testing.T) {
	tests := []struct {
		name, golden string
		run          func(s *Server, c echo.Context) error
		path         string
	}{
		{"chat", "tools_chat.golden", func(s *Server, c echo.Context) error {
			return s.answerChat(c, toolScript, &chatJob{}, chatBase())
		}, "/v1/chat/completions"},
		{"chat stream", "tools_chat_stream.golden", func(s *Server, c echo.Context) error {
			return s.answerChat(c, toolScript, &chatJob{stream: true, includeUsage: true}, chatBase())
		}, "/v1/chat/completions"},
		{"messages", "tools_messages.golden", func(s *Server, c echo.Context) error {
			return s.answerMessages(c, toolScript, &messagesJob{}, msgBase())
		}, "/v1/messages"},
		{"messages stream", "tools_messages_stream.golden", func(s *Server, c echo.Context) error {
			return s.answerMessages(c, toolScript, &messagesJob{stream: true}, msgBase())
		}, "/v1/messages"},
		{"chat stream failing midway", "fail_chat_stream.golden", func(s *Server, c echo.Context) error {
			return s.answerChat(c, failScript, &chatJob{stream: true}, chatBase())
		}, "/v1/chat/completions"},
		{"messages stream failing midway", "fail_messages_stream.golden", func(s *Server, c echo.Context) error {
			return s.answerMessages(c, failScript, &messagesJob{stream: true}, msgBase())
		}, "/v1/messages"},
		{"chat failing before output", "fail_chat.golden", func(s *Server, c echo.Context) error {
			return s.answerChat(c, script{err: engine.ErrQueueFull}, &chatJob{stream: true}, chatBase())
		}, "/v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.golden, record(t, tt.path, tt.run))
		})
	}
}

// TestStreamGoldens records the frames chat-tiny streams at temperature 0
// (without logprobs, whose last digits follow the CPU kernels; their shape
// is checked in TestChatLogprobs and TestCompletions).
func TestStreamGoldens(t *testing.T) {
	ts := startServer(t)
	tests := []struct{ golden, path, body string }{
		{"stream_chat.golden", "/v1/chat/completions", chatBody("hi", 4, `,"stream":true,"stream_options":{"include_usage":true}`)},
		{"stream_completions.golden", "/v1/completions", `{"prompt":"The capital of France is","max_tokens":6,"temperature":0,"stream":true}`},
		{"stream_messages.golden", "/v1/messages", messagesBody("hi", 4, `,"stream":true`)},
		// A json_object answer streams JSON, constrained as it is made.
		{"stream_json_object.golden", "/v1/chat/completions", chatBody("answer in JSON", 40, `,"stream":true,"response_format":{"type":"json_object"}`)},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			r := ts.post(t, tt.path, tt.body)
			golden(t, tt.golden, fmt.Sprintf("%d %s\n%s", r.Status, r.Header.Get("Content-Type"), normalize(string(r.Body))))
			if !strings.HasSuffix(string(r.Body), "\n\n") {
				t.Errorf("stream does not end with a blank line")
			}
		})
	}
}
