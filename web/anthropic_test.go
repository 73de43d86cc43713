package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// messageOut is the part of an Anthropic message the tests read.
type messageOut struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Model   string `json:"model"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func (m messageOut) text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// messagesBody is a greedy Messages request for one user message.
func messagesBody(msg string, maxTokens int, extra string) string {
	b, _ := json.Marshal(msg)
	return fmt.Sprintf(`{"model":"chat-tiny","max_tokens":%d,"messages":[{"role":"user","content":%s}],"temperature":0%s}`, maxTokens, b, extra)
}

// messagesStreamText checks the event order of a Messages stream and
// returns its text and stop reason.
func messagesStreamText(t *testing.T, fs []frame) (string, string) {
	t.Helper()
	var (
		text       strings.Builder
		stopReason string
		names      []string
		open       = -1
	)
	for i, f := range fs {
		names = append(names, f.Event)
		var ev struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock struct {
				Type string `json:"type"`
			} `json:"content_block"`
			Delta struct {
				Type       string `json:"type"`
				Text       string `json:"text"`
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
		}
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, f.Data)
		}
		if ev.Type != f.Event {
			t.Errorf("event %d: name %q, data type %q", i, f.Event, ev.Type)
		}
		switch ev.Type {
		case "content_block_start":
			if open >= 0 {
				t.Errorf("block %d starts while block %d is open", ev.Index, open)
			}
			open = ev.Index
		case "content_block_delta":
			if ev.Index != open || ev.Delta.Type != "text_delta" {
				t.Errorf("delta for block %d (%s) while block %d is open", ev.Index, ev.Delta.Type, open)
			}
			text.WriteString(ev.Delta.Text)
		case "content_block_stop":
			if ev.Index != open {
				t.Errorf("stop for block %d while block %d is open", ev.Index, open)
			}
			open = -1
		case "message_delta":
			stopReason = ev.Delta.StopReason
		}
	}
	if len(names) < 3 || names[0] != "message_start" || names[len(names)-1] != "message_stop" || names[len(names)-2] != "message_delta" || open >= 0 {
		t.Errorf("events %v: want message_start … message_delta, message_stop with every block closed", names)
	}
	return text.String(), stopReason
}

func TestMessages(t *testing.T) {
	ts := startServer(t)
	var chat chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hello there", 12, ""), &chat)

	var out messageOut
	ts.postOK(t, "/v1/messages", messagesBody("hello there", 12, ""), &out)
	if out.Type != "message" || out.Role != "assistant" || out.Model != "chat-tiny" {
		t.Errorf("message = %+v", out)
	}
	if out.text() != chat.text() {
		t.Errorf("text = %q, want the chat endpoint's %q for the same conversation", out.text(), chat.text())
	}
	wantStop := map[string]string{"length": "max_tokens", "stop": "end_turn"}[chat.Choices[0].FinishReason]
	if out.StopReason != wantStop || out.Usage.InputTokens != chat.Usage.PromptTokens || out.Usage.OutputTokens != chat.Usage.CompletionTokens {
		t.Errorf("stop_reason %q usage %+v; want %q, %d in, %d out", out.StopReason, out.Usage, wantStop, chat.Usage.PromptTokens, chat.Usage.CompletionTokens)
	}

	text, stop := messagesStreamText(t, ts.stream(t, "/v1/messages", messagesBody("hello there", 12, `,"stream":true`)))
	if text != out.text() || stop != out.StopReason {
		t.Errorf("stream = %q (%s), want %q (%s)", text, stop, out.text(), out.StopReason)
	}
}

func TestMessagesSystemAndHistory(t *testing.T) {
	ts := startServer(t)
	// A system prompt and earlier turns reach the template as the
	// equivalent OpenAI conversation does.
	anthropic := `{"max_tokens":6,"temperature":0,"system":[{"type":"text","text":"be brief"}],
		"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":"yo"},{"role":"user","content":"again"}]}`
	openAI := `{"max_tokens":6,"temperature":0,"messages":[{"role":"system","content":"be brief"},
		{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":"yo"},{"role":"user","content":"again"}]}`
	var a messageOut
	var o chatOut
	ts.postOK(t, "/v1/messages", anthropic, &a)
	ts.postOK(t, "/v1/chat/completions", openAI, &o)
	if a.text() != o.text() || a.Usage.InputTokens != o.Usage.PromptTokens {
		t.Errorf("messages: %q (%d prompt tokens), chat: %q (%d)", a.text(), a.Usage.InputTokens, o.text(), o.Usage.PromptTokens)
	}
	want := len(ts.tokenize(t, "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nyo<|im_end|>\n"+chatML("again"), false))
	if o.Usage.PromptTokens != want {
		t.Errorf("prompt_tokens = %d, want %d", o.Usage.PromptTokens, want)
	}
}
