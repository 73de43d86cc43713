package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/pool"
	"hearth/engine/tower/towertest"
	"hearth/engine/whisper"
)

// TestGemma4AudioAnswered: a real server with the tiny Gemma 4 audio model
// (tools/oracle/make_gemma4_audio_goldens.py) answers the golden clip,
// sent as an OpenAI input_audio WAV, with transformers' greedy answer after
// the processor's expanded prompt; a corrupt WAV is a 400 naming the part
// and the server keeps serving; the model lists the audio capability.
func TestGemma4AudioAnswered(t *testing.T) {
	g, err := towertest.LoadAudio()
	if err != nil {
		t.Fatal(err)
	}
	c := g.Cases[0]
	want := c.GreedyIDs
	wav, err := os.ReadFile(towertest.RepoPath(g.Clip.File))
	if err != nil {
		t.Fatal(err)
	}
	m := pool.Model{ID: "gemma4_audio", Dir: towertest.Dir(towertest.Gemma4AudioEntry)}
	ts := startServer(t, func(sc *serverConfig) { sc.model = m })
	ask := func(data string) string {
		return js(map[string]any{"max_tokens": len(c.GreedyIDs), "temperature": 0, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": data, "format": "wav"}},
			map[string]any{"type": "text", "text": "What is this sound?"}}}}})
	}
	var out chatOut
	ts.postOK(t, "/v1/chat/completions", ask(base64.StdEncoding.EncodeToString(wav)), &out)
	var detok struct {
		Text string `json:"text"`
	}
	ts.postOK(t, "/api/detokenize", js(map[string]any{"model": m.ID, "tokens": want}), &detok)
	if out.text() != detok.Text || out.Usage.PromptTokens != len(c.PromptIDs) {
		t.Fatalf("answer %q after %d prompt tokens, want %q after %d", out.text(), out.Usage.PromptTokens, detok.Text, len(c.PromptIDs))
	}

	// a WAV whose data chunk claims more than the file holds, and one
	// that is not audio at all
	corrupt := append([]byte(nil), wav[:44]...)
	binary.LittleEndian.PutUint32(corrupt[40:], 1<<30)
	for _, bad := range [][]byte{corrupt, []byte("RIFF\x10\x00\x00\x00WAVEjunkjunkjunk")} {
		r := ts.post(t, "/v1/chat/completions", ask(base64.StdEncoding.EncodeToString(bad)))
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"param":"messages[0].content[0]`) {
			t.Fatalf("corrupt WAV: %d %s, want a 400 naming messages[0].content[0]", r.Status, r.Body)
		}
	}
	ts.postOK(t, "/v1/chat/completions", ask(base64.StdEncoding.EncodeToString(wav)), &out)
	if out.text() != detok.Text {
		t.Fatalf("after the corrupt WAVs: answer %q, want %q", out.text(), detok.Text)
	}
	r := ts.do(t, http.MethodGet, "/v1/models", "", nil)
	if !bytes.Contains(r.Body, []byte(`"audio"`)) {
		t.Errorf("/v1/models does not list audio: %s", r.Body)
	}
	if r = ts.post(t, "/api/show", js(map[string]any{"model": m.ID})); r.Status != http.StatusOK || !bytes.Contains(r.Body, []byte(`"audio"`)) {
		t.Errorf("/api/show = %d, does not list audio: %s", r.Status, r.Body)
	}
}

// TestAudioTooLongWarned: a clip longer than the model hears whole is
// taken (the engine cuts it, as the model's extractor does) and the
// answer carries an X-Hearth-Warning that says so.
func TestAudioTooLongWarned(t *testing.T) {
	s := New(Options{})
	samples := make([]byte, 2*16000*3) // 3 s of silence, 16-bit mono
	wav := append([]byte("RIFF"), binary.LittleEndian.AppendUint32(nil, uint32(36+len(samples)))...)
	wav = append(wav, "WAVEfmt "...)
	wav = binary.LittleEndian.AppendUint32(wav, 16)
	wav = binary.LittleEndian.AppendUint16(wav, 1)
	wav = binary.LittleEndian.AppendUint16(wav, 1)
	wav = binary.LittleEndian.AppendUint32(wav, 16000)
	wav = binary.LittleEndian.AppendUint32(wav, 32000)
	wav = binary.LittleEndian.AppendUint16(wav, 2)
	wav = binary.LittleEndian.AppendUint16(wav, 16)
	wav = append(wav, "data"...)
	wav = binary.LittleEndian.AppendUint32(wav, uint32(len(samples)))
	wav = append(wav, samples...)
	for _, tt := range []struct {
		limit float64
		warn  string
	}{{2, `messages[0].content[0]: the audio clip is 3.0 s long; model "m" hears its first 2 s`}, {30, ""}} {
		tg := &target{media: []mediaRef{{at: "messages[0].content[0]", src: "messages[0].content[0].input_audio.data", kind: kindAudio,
			data: base64.StdEncoding.EncodeToString(wav), bare: true}}}
		info := engine.Info{ID: "m", Capabilities: []string{"audio"}, AudioSeconds: tt.limit}
		if err := s.loadMedia(context.Background(), info, tg); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(tg.warnings, "; "); got != tt.warn || len(tg.req.Audio) != 1 {
			t.Errorf("limit %v: warnings %q (%d clips), want %q", tt.limit, got, len(tg.req.Audio), tt.warn)
		}
	}
}

// TestTranscribeByChatModel: /v1/audio/transcriptions with a chat model
// that hears (the tiny Gemma 4) answers with what the chat route answers
// for the clip and the same instruction, greedily; formats that need
// timestamps are refused for it, and a model that does not hear is not a
// transcription model.
func TestTranscribeByChatModel(t *testing.T) {
	g, err := towertest.LoadAudio()
	if err != nil {
		t.Fatal(err)
	}
	wav, err := os.ReadFile(towertest.RepoPath(g.Clip.File))
	if err != nil {
		t.Fatal(err)
	}
	m := pool.Model{ID: "gemma4_audio", Dir: towertest.Dir(towertest.Gemma4AudioEntry)}
	ts := startServer(t, func(sc *serverConfig) { sc.model = m })
	for _, o := range []whisper.Options{{Task: "transcribe"}, {Task: "transcribe", Language: "de", Prompt: "Hearth"}} {
		fields := map[string]string{"model": m.ID, "temperature": "0", "language": o.Language, "prompt": o.Prompt}
		r := ts.transcribe(t, fields, wav)
		var got struct {
			Text string `json:"text"`
		}
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &got) != nil {
			t.Fatalf("transcription %+v: %d %s", o, r.Status, r.Body)
		}
		var chat chatOut
		ts.postOK(t, "/v1/chat/completions", js(map[string]any{"temperature": 0, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": base64.StdEncoding.EncodeToString(wav), "format": "wav"}},
			map[string]any{"type": "text", "text": transcribeInstruction(o)}}}}}), &chat)
		if want := strings.TrimSpace(chat.text()); got.Text != want || want == "" {
			t.Errorf("transcription %+v: %q, the chat route answers %q", o, got.Text, want)
		}
		fields["response_format"] = "text"
		if r := ts.transcribe(t, fields, wav); r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != got.Text {
			t.Errorf("text format: %d %q, want %q", r.Status, r.Body, got.Text)
		}
	}
	for _, f := range []string{"srt", "vtt", "verbose_json"} {
		if r := ts.transcribe(t, map[string]string{"model": m.ID, "response_format": f}, wav); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "timestamps") {
			t.Errorf("response_format %s: %d %s, want a 400 about timestamps", f, r.Status, r.Body)
		}
	}
	deaf := startServer(t)
	if r := deaf.transcribe(t, map[string]string{"model": "chat-tiny"}, wav); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "not a transcription model") {
		t.Errorf("a model that does not hear: %d %s", r.Status, r.Body)
	}
	if r := ts.transcribe(t, map[string]string{"model": m.ID}, []byte("RIFF\x10\x00\x00\x00WAVEjunk")); r.Status != http.StatusBadRequest {
		t.Errorf("a corrupt WAV: %d %s, want 400", r.Status, r.Body)
	}
}
