package web

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

// TestAudioParts: OpenAI input_audio parts are read, and a model with no
// audio tower answers 400 naming the model and the part; malformed parts
// are 400s naming the field; the server keeps serving.
func TestAudioParts(t *testing.T) {
	ts := startServer(t)
	wav := base64.StdEncoding.EncodeToString([]byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x80\x3e\x00\x00\x00\x7d\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"))
	for _, tc := range []struct{ body, param, want string }{
		{`{"messages":[{"role":"user","content":[{"type":"text","text":"what is said?"},{"type":"input_audio","input_audio":{"data":"` + wav + `","format":"wav"}}]}]}`,
			"messages[0].content[1]", `takes no audio (it has no audio capability)`},
		{`{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"format":"wav"}}]}]}`,
			"messages[0].content[0].input_audio.data", "required"},
		{`{"messages":[{"role":"assistant","content":[{"type":"input_audio","input_audio":{"data":"` + wav + `"}}]}]}`,
			"messages[0].content[0]", "user messages only"},
	} {
		r := ts.post(t, "/v1/chat/completions", tc.body)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), tc.want) || !strings.Contains(string(r.Body), `"param":"`+tc.param+`"`) {
			t.Errorf("%s\n= %d %s; want 400 at %s containing %q", tc.body, r.Status, r.Body, tc.param, tc.want)
		}
	}
	var out map[string]any
	ts.postOK(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, &out)
}
