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

// TestGemma4VideoAnswered: a real server with the tiny Gemma 4 vision
// model answers a real clip (the entry's clip.mov) sent as a video_url
// part: ffmpeg decodes it, the frames are sampled by the model's video
// processor (num_frames 3, as Gemma4VideoProcessor), each goes through
// the tower as a picture after its time in the prompt, and the answer is
// transformers' greedy one for that conversation; the model lists the
// video capability; two clips past the context are a 400 saying so, a
// part that is not a video a 400 naming it.
func TestGemma4VideoAnswered(t *testing.T) {
	_, errProbe := exec.LookPath("ffprobe")
	_, err := exec.LookPath("ffmpeg")
	testenv.Need(t, "ffmpeg and ffprobe (Debian package ffmpeg)", err == nil && errProbe == nil)
	vg, err := towertest.LoadGemma4Video()
	if err != nil {
		t.Fatal(err)
	}
	m := pool.Model{ID: "gemma4_vision", Dir: towertest.Dir(towertest.Gemma4Entry)}
	clip, err := os.ReadFile(filepath.Join(m.Dir, vg.Videos[0].File))
	if err != nil {
		t.Fatal(err)
	}
	c := vg.Cases[0]
	ts := startServer(t, func(sc *serverConfig) { sc.model = m; sc.opt.Media = MediaOptions{PartBytes: 1 << 20} })

	var out chatOut
	ts.postOK(t, "/v1/chat/completions", videoBody(clip, "What happens in this clip?", len(c.GreedyIDs)), &out)
	var detok struct {
		Text string `json:"text"`
	}
	ts.postOK(t, "/api/detokenize", js(map[string]any{"model": m.ID, "tokens": c.GreedyIDs}), &detok)
	if out.text() != detok.Text || out.Usage.PromptTokens != len(c.PromptIDs) {
		t.Fatalf("answer %q after %d prompt tokens, want %q after %d", out.text(), out.Usage.PromptTokens, detok.Text, len(c.PromptIDs))
	}
	if r := ts.do(t, http.MethodGet, "/v1/models", "", nil); !bytes.Contains(r.Body, []byte(`"video"`)) {
		t.Errorf("/v1/models does not list video: %s", r.Body)
	}

	part := map[string]any{"type": "video_url", "video_url": map[string]any{"url": dataURL("video/quicktime", clip)}}
	two := js(map[string]any{"max_tokens": 2, "messages": []any{map[string]any{"role": "user", "content": []any{part, part}}}})
	r := ts.post(t, "/v1/chat/completions", two)
	if msg, _ := errorOf(t, r); r.Status != http.StatusBadRequest || !strings.Contains(msg, "context") {
		t.Errorf("two clips of 180 soft tokens in 256 positions: %d %s, want a 400 about the context", r.Status, r.Body)
	}
	refusedVideo(t, ts, videoBody([]byte("not a video, just bytes"), "?", 2), "not a video")
	// and the server still answers
	var again chatOut
	ts.postOK(t, "/v1/chat/completions", videoBody(clip, "What happens in this clip?", 1), &again)
}
