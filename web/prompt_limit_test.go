package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestHugePromptIsAContextError posts an 8 MB message to chat-tiny (a
// 256-token context) on each API: each answers 400 with the context
// message, found before the prompt is tokenized, and the server answers a
// normal request afterwards.
func TestHugePromptIsAContextError(t *testing.T) {
	ts := startServer(t)
	big, err := json.Marshal(strings.Repeat("hello world, this is a long message. ", (8<<20)/37))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, body string
	}{
		{"/v1/chat/completions", `{"model":"chat-tiny","messages":[{"role":"user","content":` + string(big) + `}]}`},
		{"/v1/completions", `{"model":"chat-tiny","prompt":` + string(big) + `}`},
		{"/v1/messages", `{"model":"chat-tiny","max_tokens":8,"messages":[{"role":"user","content":` + string(big) + `}]}`},
		{"/api/chat", `{"model":"chat-tiny","stream":false,"messages":[{"role":"user","content":` + string(big) + `}]}`},
	}
	for _, tt := range tests {
		r := ts.post(t, tt.path, tt.body)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "the prompt is at least") ||
			!strings.Contains(string(r.Body), "context is 256 tokens") {
			t.Errorf("POST %s with an 8 MB prompt = %d %.300s, want 400 with the context message", tt.path, r.Status, r.Body)
		}
	}
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	ts.postOK(t, "/v1/chat/completions", chatBody("hello there", 4, ""), &out)
	if len(out.Choices) != 1 {
		t.Errorf("a normal request after the huge ones: %+v", out)
	}
}
