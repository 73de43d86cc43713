package web

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/engine/whisper/whispertest"

	"github.com/labstack/echo/v4"
)

// whisperServer serves chat-tiny as the default and a tiny random Whisper
// checkpoint as "whisper-tiny".
func whisperServer(t *testing.T) *testServer {
	t.Helper()
	dir := t.TempDir()
	if err := whispertest.Write(dir, 11, false); err != nil {
		t.Fatal(err)
	}
	return startServer(t, func(c *serverConfig) {
		c.pool.Resolve = func(name string) (pool.Model, error) {
			if name == "whisper-tiny" {
				return pool.Model{ID: name, Dir: dir}, nil
			}
			return pool.Model{}, fmt.Errorf("%w: %q", registry.ErrNotFound, name)
		}
	})
}

// toneWAV is a 16 kHz 16-bit mono WAV of secs seconds of a wobbling tone.
func toneWAV(secs float64) []byte {
	n := int(secs * 16000)
	data := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		t := float64(i) / 16000
		v := 0.4 * math.Sin(2*math.Pi*(220+80*math.Sin(3*t))*t)
		binary.LittleEndian.PutUint16(data[2*i:], uint16(int16(v*32767)))
	}
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+len(data)))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(16000), uint32(32000), uint16(2), uint16(16)} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(len(data)))
	b.Write(data)
	return b.Bytes()
}

// form builds a multipart body: fields, and the file part when file is
// not nil.
func form(fields map[string]string, file []byte) (body, contentType string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		w.WriteField(k, v)
	}
	if file != nil {
		fw, _ := w.CreateFormFile("file", "clip.wav")
		fw.Write(file)
	}
	w.Close()
	return b.String(), w.FormDataContentType()
}

func (ts *testServer) transcribe(t *testing.T, fields map[string]string, file []byte) response {
	t.Helper()
	body, ct := form(fields, file)
	return ts.do(t, http.MethodPost, "/v1/audio/transcriptions", body, map[string]string{"Content-Type": ct})
}

// TestTranscriptions: every response_format from a real server, over a
// clip shorter than the model's chunk and one longer (cut, with a note).
func TestTranscriptions(t *testing.T) {
	ts := whisperServer(t)
	clip := toneWAV(1.3)
	base := map[string]string{"model": "whisper-tiny", "language": "en"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}

	r := ts.transcribe(t, base, clip)
	var js struct {
		Text string `json:"text"`
		Note string `json:"note"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &js) != nil || js.Note != "" {
		t.Fatalf("json: %d %s", r.Status, r.Body)
	}

	r = ts.transcribe(t, with("response_format", "text"), clip)
	if r.Status != http.StatusOK || string(r.Body) != js.Text+"\n" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("text: %d %q (%s), json text %q", r.Status, r.Body, r.Header.Get("Content-Type"), js.Text)
	}

	r = ts.transcribe(t, with("response_format", "verbose_json"), clip)
	var vj struct {
		Task     string  `json:"task"`
		Language string  `json:"language"`
		Duration float64 `json:"duration"`
		Text     string  `json:"text"`
		Segments []struct {
			ID     int     `json:"id"`
			Start  float64 `json:"start"`
			End    float64 `json:"end"`
			Text   string  `json:"text"`
			Tokens []int32 `json:"tokens"`
		} `json:"segments"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &vj) != nil {
		t.Fatalf("verbose_json: %d %s", r.Status, r.Body)
	}
	if vj.Task != "transcribe" || vj.Language != "english" || math.Abs(vj.Duration-1.3) > 1e-6 || len(vj.Segments) == 0 {
		t.Errorf("verbose_json: %s", r.Body)
	}
	for i, s := range vj.Segments {
		if s.ID != i || s.End < s.Start && s.End != 0 {
			t.Errorf("verbose_json segment %d: %+v", i, s)
		}
	}

	cue := `\d\d:\d\d:\d\d[,.]\d\d\d --> \d\d:\d\d:\d\d[,.]\d\d\d\n`
	r = ts.transcribe(t, with("response_format", "srt"), clip)
	if r.Status != http.StatusOK || (len(r.Body) > 0 && !regexp.MustCompile(`^1\n`+cue).Match(r.Body)) {
		t.Errorf("srt: %d %q", r.Status, r.Body)
	}
	r = ts.transcribe(t, with("response_format", "vtt"), clip)
	if r.Status != http.StatusOK || !strings.HasPrefix(string(r.Body), "WEBVTT\n\n") ||
		(len(r.Body) > 8 && !regexp.MustCompile(`^WEBVTT\n\n`+cue).Match(r.Body)) {
		t.Errorf("vtt: %d %q", r.Status, r.Body)
	}

	// Greedy decoding is repeatable; a detected language is one the model has.
	var again struct{ Text string }
	if r := ts.transcribe(t, base, clip); r.Status != http.StatusOK || json.Unmarshal(r.Body, &again) != nil || again.Text != js.Text {
		t.Errorf("greedy twice: %q then %d %s", js.Text, r.Status, r.Body)
	}
	r = ts.transcribe(t, map[string]string{"model": "whisper-tiny", "response_format": "verbose_json", "temperature": "0.7", "prompt": "hello there"}, clip)
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &vj) != nil || !map[string]bool{"english": true, "german": true, "french": true}[vj.Language] {
		t.Errorf("detected language, sampled, with a prompt: %d %s", r.Status, r.Body)
	}

	// Translation route.
	body, ct := form(map[string]string{"model": "whisper-tiny"}, clip)
	r = ts.do(t, http.MethodPost, "/v1/audio/translations", body, map[string]string{"Content-Type": ct})
	if r.Status != http.StatusOK {
		t.Errorf("translations: %d %s", r.Status, r.Body)
	}

	// Longer than the model's 2 s chunk: cut, and said so.
	r = ts.transcribe(t, base, toneWAV(3.5))
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &js) != nil || !strings.Contains(js.Note, "only its first 2 s") ||
		!strings.Contains(r.Header.Get("X-Hearth-Warning"), "3.5 s long") {
		t.Errorf("long clip: %d %s (note header %q)", r.Status, r.Body, r.Header.Get("X-Hearth-Warning"))
	}
}

// TestTranscriptionErrors: bad requests are 400s that name the field, a
// chat model is refused by name, and a chat request to the Whisper model
// says where to send audio.
func TestTranscriptionErrors(t *testing.T) {
	ts := whisperServer(t)
	clip := toneWAV(0.5)
	for _, tc := range []struct {
		name   string
		fields map[string]string
		file   []byte
		status int
		param  string
		want   string
	}{
		{"no file", map[string]string{"model": "whisper-tiny"}, nil, 400, "file", "file is required"},
		{"no model", map[string]string{}, clip, 400, "model", "model is required"},
		{"not audio", map[string]string{"model": "whisper-tiny"}, []byte("hello, this is not a sound file at all"), 400, "", "not an audio file"},
		{"corrupt wav", map[string]string{"model": "whisper-tiny"}, []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00"), 400, "", "wav: fmt chunk"},
		{"empty wav", map[string]string{"model": "whisper-tiny"}, toneWAV(0), 400, "file", "no samples"},
		{"bad format", map[string]string{"model": "whisper-tiny", "response_format": "xml"}, clip, 400, "response_format", `xml`},
		{"word timestamps", map[string]string{"model": "whisper-tiny", "timestamp_granularities[]": "word"}, clip, 400, "timestamp_granularities", "segment timestamps only"},
		{"bad temperature", map[string]string{"model": "whisper-tiny", "temperature": "hot"}, clip, 400, "temperature", "from 0 to 1"},
		{"unknown language", map[string]string{"model": "whisper-tiny", "language": "tlh"}, clip, 400, "language", `tlh`},
		{"chat model", map[string]string{"model": "chat-tiny"}, clip, 400, "model", `chat-tiny\" is not a transcription model`},
		{"unknown model", map[string]string{"model": "nope"}, clip, 404, "model", "nope"},
	} {
		r := ts.transcribe(t, tc.fields, tc.file)
		if r.Status != tc.status || !strings.Contains(string(r.Body), tc.want) ||
			tc.param != "" && !strings.Contains(string(r.Body), `"param":"`+tc.param+`"`) {
			t.Errorf("%s: %d %s; want %d (param %q) containing %q", tc.name, r.Status, r.Body, tc.status, tc.param, tc.want)
		}
	}
	r := ts.do(t, http.MethodPost, "/v1/audio/transcriptions", `{"model":"whisper-tiny"}`, nil)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "multipart/form-data") {
		t.Errorf("JSON body: %d %s", r.Status, r.Body)
	}
	r = ts.post(t, "/v1/chat/completions", `{"model":"whisper-tiny","messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "/v1/audio/transcriptions") {
		t.Errorf("chat to Whisper: %d %s", r.Status, r.Body)
	}
	// Still serving.
	if r := ts.transcribe(t, map[string]string{"model": "whisper-tiny", "language": "en"}, clip); r.Status != http.StatusOK {
		t.Errorf("after the errors: %d %s", r.Status, r.Body)
	}
}

// TestTranscriptionCancel: a client that leaves stops its transcription;
// the model serves the next request.
func TestTranscriptionCancel(t *testing.T) {
	ts := whisperServer(t)
	body, ct := form(map[string]string{"model": "whisper-tiny", "language": "en"}, toneWAV(1))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/audio/transcriptions", strings.NewReader(body))
	req.Header.Set("Content-Type", ct)
	go func() { time.Sleep(time.Millisecond); cancel() }()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	if r := ts.transcribe(t, map[string]string{"model": "whisper-tiny", "language": "en"}, toneWAV(1)); r.Status != http.StatusOK {
		t.Fatalf("after a cancelled request: %d %s", r.Status, r.Body)
	}
}

// TestTranscribeQueueBounded: a model with maxTranscribeQueue requests
// already waiting refuses the next one at once (429, as the chat queue).
func TestTranscribeQueueBounded(t *testing.T) {
	ts := &transcriberSet{models: map[string]*transcriber{"dir": {turn: make(chan struct{}, 1), busy: maxTranscribeQueue}}}
	if _, _, err := ts.get(context.Background(), "dir", engine.Options{}); !errors.Is(err, engine.ErrQueueFull) {
		t.Fatalf("get with a full queue: %v, want engine.ErrQueueFull", err)
	}
}

// FuzzTranscriptionForm feeds arbitrary bodies to the transcription
// route's form parser: it returns a request or a client error (400/413),
// never panics.
func FuzzTranscriptionForm(f *testing.F) {
	body, ct := form(map[string]string{"model": "whisper-tiny", "response_format": "srt", "temperature": "0.2", "language": "en"}, toneWAV(0.1))
	f.Add([]byte(body), ct)
	body, ct = form(map[string]string{"model": "m", "timestamp_granularities[]": "word"}, nil)
	f.Add([]byte(body), ct)
	f.Add([]byte("--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nRIFF\r\n--x--\r\n"), "multipart/form-data; boundary=x")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/audio/transcriptions", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		c := echo.New().NewContext(req, httptest.NewRecorder())
		tr, err := parseTranscription(c, "transcribe")
		if err == nil {
			if tr.model == "" || tr.file == nil || !transcribeFormats[tr.format] {
				t.Fatalf("accepted %+v", tr)
			}
			return
		}
		var ae *apiError
		var mbe *http.MaxBytesError
		if !errors.As(err, &ae) && !errors.As(err, &mbe) {
			t.Fatalf("error %T %v is not a client error", err, err)
		}
	})
}

// TestTranscribeWontFit: a Whisper checkpoint that does not fit in the
// memory the pool reads is refused before it loads, as a chat model is,
// and the server keeps serving; with room it transcribes.
func TestTranscribeWontFit(t *testing.T) {
	dir := t.TempDir()
	if err := whispertest.Write(dir, 11, false); err != nil {
		t.Fatal(err)
	}
	for _, avail := range []int64{1 << 20, 64 << 30} {
		ts := startServer(t, func(c *serverConfig) {
			c.pool.Resolve = func(name string) (pool.Model, error) { return pool.Model{ID: name, Dir: dir}, nil }
			c.pool.Memory = func() (fit.Memory, error) { return fit.Memory{TotalBytes: avail, AvailableBytes: avail}, nil }
		})
		r := ts.transcribe(t, map[string]string{"model": "whisper-tiny"}, toneWAV(1))
		if avail < 1<<30 {
			if r.Status < 400 || r.Status >= 600 || !strings.Contains(string(r.Body), "fit") {
				t.Errorf("with %d bytes of memory: %d %s, want the fit refusal", avail, r.Status, r.Body)
			}
			continue
		}
		if r.Status != http.StatusOK {
			t.Errorf("with room: %d %s", r.Status, r.Body)
		}
	}
}
