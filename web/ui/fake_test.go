package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// fakeAPI is a stand-in for the Hearth server that speaks just enough of
// the OpenAI contract for the page: /v1/models, /health and streaming
// /v1/chat/completions with a scripted reply. It serves the chat page
// itself through Handler. It exists for the documentation screenshot,
// whose model must claim vision (no committed test model has a vision
// tower); the browser tests proper run against the real server.
type fakeAPI struct {
	models []map[string]any
	reply  string        // streamed in word-sized chunks
	delay  time.Duration // between chunks
	ui     http.Handler
}

func newFakeAPI(reply string, delay time.Duration, models ...map[string]any) *fakeAPI {
	return &fakeAPI{models: models, reply: reply, delay: delay, ui: Handler()}
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": f.models})
	case "/api/ps":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"models":[]}`)
	case "/health":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"ok"}`)
	case "/v1/chat/completions":
		f.chat(w, r)
	default:
		f.ui.ServeHTTP(w, r)
	}
}

func (f *fakeAPI) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"malformed JSON"}}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant"}, nil))
	words := strings.SplitAfter(f.reply, " ")
	for _, wd := range words {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(f.delay):
		}
		send(chunk(map[string]any{"content": wd}, nil))
	}
	send(chunk(map[string]any{}, "stop"))
	send(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 412, "completion_tokens": len(words), "total_tokens": 412 + len(words)}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}
