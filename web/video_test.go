package web

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/pool"
	"hearth/engine/tower/towertest"
	"hearth/internal/testenv"
)

// qwenVisionModel is the tiny Qwen 3.5 checkpoint with its vision tower
// and video golden (tools/oracle/make_qwen_video_goldens.py).
func qwenVisionModel(t *testing.T) (pool.Model, *towertest.VideoGolden) {
	t.Helper()
	vg, err := towertest.LoadVideo()
	if err != nil {
		t.Fatal(err)
	}
	return pool.Model{ID: "qwen3_5_vision", Dir: towertest.Dir(towertest.Qwen35Entry)}, vg
}

// videoBody is a chat request with the clip as an OpenAI video_url part
// (vLLM's shape) before text.
func videoBody(clip []byte, text string, maxTokens int) string {
	return js(map[string]any{"max_tokens": maxTokens, "temperature": 0, "messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "video_url", "video_url": map[string]any{"url": dataURL("video/quicktime", clip)}},
		map[string]any{"type": "text", "text": text}}}}})
}

// TestVideoAnswered: a real server with the tiny Qwen 3.5 vision model
// answers a real clip sent as a video_url part: ffmpeg decodes and
// samples it, the prompt gets the frames' times and soft tokens, and the
// answer is transformers' greedy one for that conversation; the model
// lists the video capability; the limits stay 400s naming the part.
func TestVideoAnswered(t *testing.T) {
	_, errProbe := exec.LookPath("ffprobe")
	_, err := exec.LookPath("ffmpeg")
	testenv.Need(t, "ffmpeg and ffprobe (Debian package ffmpeg)", err == nil && errProbe == nil)
	m, vg := qwenVisionModel(t)
	clip, err := os.ReadFile(filepath.Join(m.Dir, vg.Videos[0].File))
	if err != nil {
		t.Fatal(err)
	}
	var c *towertest.VideoCase
	for i := range vg.Cases {
		if vg.Cases[i].Name == "one_video" {
			c = &vg.Cases[i]
		}
	}
	if c == nil {
		t.Fatal("the golden has no one_video case")
	}
	ts := startServer(t, func(c *serverConfig) { c.model = m; c.opt.Media = MediaOptions{PartBytes: 1 << 20} })

	var out chatOut
	ts.postOK(t, "/v1/chat/completions", videoBody(clip, "What happens in this clip?", len(c.GreedyIDs)), &out)
	var detok struct {
		Text string `json:"text"`
	}
	ts.postOK(t, "/api/detokenize", js(map[string]any{"model": m.ID, "tokens": c.GreedyIDs}), &detok)
	if want := detok.Text; out.text() != want || out.Usage.PromptTokens != len(c.PromptIDs) {
		t.Fatalf("answer %q after %d prompt tokens, want %q after %d", out.text(), out.Usage.PromptTokens, want, len(c.PromptIDs))
	}

	t.Run("capabilities", func(t *testing.T) {
		r := ts.do(t, http.MethodGet, "/v1/models", "", nil)
		if !bytes.Contains(r.Body, []byte(`"video"`)) {
			t.Errorf("/v1/models does not list video: %s", r.Body)
		}
	})
	t.Run("part over its limit", func(t *testing.T) {
		big := append(bytes.Clone(clip), make([]byte, 1<<20)...)
		refusedVideo(t, ts, videoBody(big, "?", 2), "at most 1 MiB per video")
	})
	t.Run("not a video", func(t *testing.T) {
		refusedVideo(t, ts, videoBody([]byte("not a video, just bytes"), "?", 2), "not a video")
	})
	t.Run("truncated", func(t *testing.T) {
		refusedVideo(t, ts, videoBody(clip[:len(clip)/3], "?", 2), "video")
	})
	// and the server still answers
	var again chatOut
	ts.postOK(t, "/v1/chat/completions", videoBody(clip, "What happens in this clip?", 1), &again)
}

// refusedVideo posts a chat whose first part is a video and wants a 400
// naming that part and saying want.
func refusedVideo(t *testing.T, ts *testServer, body, want string) {
	t.Helper()
	r := ts.post(t, "/v1/chat/completions", body)
	if r.Status != http.StatusBadRequest {
		t.Fatalf("POST = %d %s, want 400", r.Status, r.Body)
	}
	msg, param := errorOf(t, r)
	t.Logf("%s", msg)
	if at := "messages[0].content[0]"; !strings.HasPrefix(msg, at) || !strings.HasPrefix(param, at) || !strings.Contains(msg, want) {
		t.Errorf("message %q (param %q), want one naming %s and saying %q", msg, param, at, want)
	}
}
