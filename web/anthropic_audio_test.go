package web

import (
	"encoding/base64"
	"testing"
)

// TestMessagesAudioRefused: Anthropic's Messages API has no audio block;
// the shapes clients send anyway (an "audio" or "input_audio" block, a
// document whose media type is audio) are each a 400 naming the block and
// pointing to the OpenAI route's input_audio parts, on /v1/messages and
// its count_tokens alike, and the server keeps serving. A document that
// is not audio keeps its own answer.
func TestMessagesAudioRefused(t *testing.T) {
	ts := startServer(t)
	wav := base64.StdEncoding.EncodeToString([]byte("RIFF\x24\x00\x00\x00WAVEfmt "))
	const route = "send audio to /v1/chat/completions as an input_audio part"
	for _, tt := range []struct {
		name  string
		block map[string]any
		want  string
	}{
		{"input_audio", map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": wav, "format": "wav"}}, `(got an "input_audio" block); ` + route},
		{"audio", map[string]any{"type": "audio", "source": map[string]any{"type": "base64", "media_type": "audio/wav", "data": wav}}, `(got an "audio" block); ` + route},
		{"document", map[string]any{"type": "document", "source": map[string]any{"type": "base64", "media_type": "Audio/MPEG", "data": wav}}, "(got a document of media type audio/mpeg); " + route},
		{"pdf", map[string]any{"type": "document", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": wav}}, "document content is not supported yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := js(map[string]any{"model": "chat-tiny", "max_tokens": 4, "messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is this sound?"}, tt.block}}}})
			for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
				ts.refused(t, path, body, "messages[0].content[1]", tt.want)
			}
		})
	}
}
