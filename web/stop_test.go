package web

import (
	"encoding/json"
	"strings"
	"testing"
)

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// TestStopAcrossTokens picks a stop string that starts in one generated
// token and ends in the next, from the model's own greedy answer, and
// checks every endpoint ends the answer right before it, streaming or not.
func TestStopAcrossTokens(t *testing.T) {
	ts := startServer(t)
	const msg = "hello there"
	const maxTokens = 40

	// The greedy answer token by token: the token-id completion of the
	// prompt the chat template renders is the chat's generation.
	prompt, _ := json.Marshal(ts.tokenize(t, chatML(msg), false))
	var full completionOut
	ts.postOK(t, "/v1/completions", `{"prompt":`+string(prompt)+`,"max_tokens":40,"temperature":0,"return_token_ids":true}`, &full)
	answer, gen := full.Choices[0].Text, full.Choices[0].TokenIDs
	var chat chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody(msg, maxTokens, ""), &chat)
	if chat.text() != answer {
		t.Fatalf("chat answer %q differs from the token-id completion of its prompt %q", chat.text(), answer)
	}

	stop, at := "", -1
	for k := 1; k < len(gen) && at < 0; k++ {
		prefix := ts.detokenize(t, gen[:k])
		b := len(prefix)
		if !strings.HasPrefix(answer, prefix) || b < 2 || b+2 > len(answer) {
			continue
		}
		if w := answer[b-2 : b+2]; printableASCII(w) && strings.Index(answer, w) == b-2 {
			stop, at = w, b-2
		}
	}
	if at < 0 {
		t.Fatalf("no printable window across a token boundary in the greedy answer %q", answer)
	}
	want := answer[:at]
	stopJSON, _ := json.Marshal(stop)
	t.Logf("answer %q, stop %q at byte %d", answer, stop, at)

	openAI := chatBody(msg, maxTokens, `,"stop":[`+string(stopJSON)+`]`)
	anthropic := messagesBody(msg, maxTokens, `,"stop_sequences":[`+string(stopJSON)+`]`)
	completion := `{"prompt":` + string(prompt) + `,"max_tokens":40,"temperature":0,"stop":` + string(stopJSON)

	t.Run("chat", func(t *testing.T) {
		var out chatOut
		ts.postOK(t, "/v1/chat/completions", openAI, &out)
		if out.text() != want || out.Choices[0].FinishReason != "stop" {
			t.Errorf("got %q (%s), want %q (stop)", out.text(), out.Choices[0].FinishReason, want)
		}
	})
	t.Run("chat stream", func(t *testing.T) {
		text, finish := chatStreamText(t, ts.stream(t, "/v1/chat/completions", strings.TrimSuffix(openAI, "}")+`,"stream":true}`))
		if text != want || finish != "stop" {
			t.Errorf("got %q (%s), want %q (stop)", text, finish, want)
		}
	})
	t.Run("completions", func(t *testing.T) {
		var out completionOut
		ts.postOK(t, "/v1/completions", completion+"}", &out)
		if out.Choices[0].Text != want || out.Choices[0].FinishReason != "stop" {
			t.Errorf("got %q (%s), want %q (stop)", out.Choices[0].Text, out.Choices[0].FinishReason, want)
		}
	})
	t.Run("messages", func(t *testing.T) {
		var out messageOut
		ts.postOK(t, "/v1/messages", anthropic, &out)
		if out.text() != want || out.StopReason != "stop_sequence" || out.StopSequence == nil || *out.StopSequence != stop {
			t.Errorf("got %q (%s, %v), want %q (stop_sequence %q)", out.text(), out.StopReason, out.StopSequence, want, stop)
		}
	})
	t.Run("messages stream", func(t *testing.T) {
		text, stopReason := messagesStreamText(t, ts.stream(t, "/v1/messages", strings.TrimSuffix(anthropic, "}")+`,"stream":true}`))
		if text != want || stopReason != "stop_sequence" {
			t.Errorf("got %q (%s), want %q (stop_sequence)", text, stopReason, want)
		}
	})
}

// chatStreamText joins a chat stream's content and returns its finish
// reason.
func chatStreamText(t *testing.T, fs []frame) (string, string) {
	t.Helper()
	var text strings.Builder
	finish := ""
	for _, f := range fs {
		if f.Data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(f.Data), &ch); err != nil {
			t.Fatalf("%v: %s", err, f.Data)
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
	return text.String(), finish
}
