package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/tower/towertest"
	"hearth/internal/testenv"
	"hearth/media"
)

// goldenClip decodes the Qwen 3.5 entry's clip as a server does (ffmpeg
// here, sampled as Qwen3VLVideoProcessor samples), checking the frames
// the reference sampled.
func goldenClip(t *testing.T, vg *towertest.VideoGolden) []media.Frame {
	t.Helper()
	v := vg.Videos[0]
	return sampledClip(t, filepath.Join(towertest.Dir(towertest.Qwen35Entry), v.File), media.VideoOptions{}, v.Sampled)
}

// sampledClip decodes the clip at path with ffmpeg, sampled as opt says,
// and checks the frames taken are the reference's.
func sampledClip(t *testing.T, path string, opt media.VideoOptions, want []int) []media.Frame {
	t.Helper()
	_, errProbe := exec.LookPath("ffprobe")
	_, err := exec.LookPath("ffmpeg")
	testenv.Need(t, "ffmpeg and ffprobe (Debian package ffmpeg)", err == nil && errProbe == nil)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	frames, err := media.VideoFrames(context.Background(), raw, opt)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, f := range frames {
		idx = append(idx, f.Index)
	}
	if !equal(idx, want) {
		t.Fatalf("sampled frames %v, want %v", idx, want)
	}
	return frames
}

// TestVideoProcessorMatchesGolden: the checkpoint's video processor over
// the decoded clip gives the reference's pixel_values_videos and
// video_grid_thw, and the prompt's frame times are the reference's.
func TestVideoProcessorMatchesGolden(t *testing.T) {
	vg, err := towertest.LoadVideo()
	if err != nil {
		t.Fatal(err)
	}
	frames := goldenClip(t, vg)
	p, err := media.LoadImageProcessor(towertest.Dir(towertest.Qwen35Entry))
	if err != nil {
		t.Fatal(err)
	}
	px, err := p.Video(frames)
	if err != nil {
		t.Fatal(err)
	}
	want := vg.Videos[0]
	if !equal(px.Shape, want.PixelShape) || px.Grid != want.Grid {
		t.Fatalf("shape %v grid %v, want %v grid %v", px.Shape, px.Grid, want.PixelShape, want.Grid)
	}
	worst := 0.0
	for j := range want.PixelValues {
		worst = max(worst, math.Abs(float64(px.Data[j]-want.PixelValues[j])))
	}
	if worst > 1e-6 {
		t.Fatalf("pixel values off by up to %.3g", worst)
	}
	t.Logf("clip %dx%d, %d frames sampled: max |Δ| %.3g", want.Width, want.Height, len(frames), worst)
	if got := media.VideoTimestamps(frames, p.VideoProcessor.TemporalPatchSize); !equal(got, want.Timestamps) {
		t.Fatalf("timestamps %v, want %v", got, want.Timestamps)
	}
}

// TestGenerateWithVideo runs each golden video conversation through
// Generate: the clip decoded from its file, the video processor, the
// prompt's per-frame times and soft tokens, the tower over both temporal
// patches, mRoPE and the decode loop give transformers' prompt ids and
// greedy ids, on the cpu and gpu backends, with prefill chunks that end
// before each media run.
func TestGenerateWithVideo(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	vg, err := towertest.LoadVideo()
	if err != nil {
		t.Fatal(err)
	}
	frames := goldenClip(t, vg)
	for _, backend := range []string{"cpu", "gpu"} {
		for _, chunk := range []int{0, 7} {
			t.Run(fmt.Sprintf("%s/chunk%d", backend, chunk), func(t *testing.T) {
				r := openVision(t, towertest.Qwen35Entry, g, RunnerOptions{Options: Options{Backend: backend, ChunkTokens: chunk}})
				if !strings.Contains(strings.Join(r.Info().Capabilities, ","), "video") {
					t.Fatalf("capabilities %v lack video", r.Info().Capabilities)
				}
				for _, c := range vg.Cases {
					req := Request{Messages: c.Messages, Images: goldenImages(t, towertest.Qwen35Entry, g, c.Images),
						Videos: [][]media.Frame{frames}, MaxTokens: len(c.GreedyIDs), Logprobs: true}
					wantGoldenAnswer(t, r, req, c.Name, c.PromptIDs, c.GreedyIDs, c.ExpandedText)
				}
			})
		}
	}
}

// TestVideoRequestErrors: a clip to a model whose tower takes no video
// names the model; a count of clips the conversation does not hold, a
// clip without messages, or frames the processor refuses are the
// request's fault.
func TestVideoRequestErrors(t *testing.T) {
	g3, err := towertest.Load(towertest.Gemma3Entry)
	if err != nil {
		t.Fatal(err)
	}
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	// frames as a decoder gives them: 4 of 32×32 at 2 a second
	frame := media.Image{Width: 32, Height: 32, Pix: make([]uint8, 32*32*3)}
	var clip []media.Frame
	for i := range 4 {
		clip = append(clip, media.Frame{Image: frame, Index: i, FPS: 2})
	}
	video := []byte(`[{"role":"user","content":[{"type":"video"},{"type":"text","text":"hi"}]}]`)
	var re *RequestError

	gemma := openVision(t, towertest.Gemma3Entry, g3, RunnerOptions{})
	if strings.Contains(strings.Join(gemma.Info().Capabilities, ","), "video") {
		t.Errorf("gemma3_vision claims video: %v", gemma.Info().Capabilities)
	}
	_, err = gemma.Generate(context.Background(), Request{Messages: video, Videos: [][]media.Frame{clip}, MaxTokens: 2}, func(Delta) error { return nil })
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "takes no video") {
		t.Errorf("gemma3_vision with a clip: %v", err)
	}

	r := openVision(t, towertest.Qwen35Entry, g, RunnerOptions{})
	odd := append([]media.Frame{}, clip...)
	odd[2].Image = media.Image{Width: 16, Height: 16, Pix: make([]uint8, 16*16*3)}
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"two parts, one clip", Request{Messages: []byte(`[{"role":"user","content":[{"type":"video"},{"type":"video"}]}]`), Videos: [][]media.Frame{clip}}, "2 video parts but the request holds 1"},
		{"no part", Request{Messages: []byte(`[{"role":"user","content":"hi"}]`), Videos: [][]media.Frame{clip}}, "0 video parts"},
		{"plain prompt", Request{Prompt: "hi", Videos: [][]media.Frame{clip}}, "videos go in messages"},
		{"frames of two sizes", Request{Messages: video, Videos: [][]media.Frame{odd}}, "video 1: "},
		{"no frames", Request{Messages: video, Videos: [][]media.Frame{{}}}, "video 1: "},
	} {
		tc.req.MaxTokens = 2
		_, err := r.Generate(context.Background(), tc.req, func(Delta) error { return nil })
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a request error saying %q", tc.name, err, tc.want)
		}
	}
	// a clip that fits: the prompt holds its two temporal patches' times
	pl, err := r.Prompter().PromptMedia(context.Background(), &Request{Messages: video, Videos: [][]media.Frame{clip}})
	if err != nil {
		t.Fatal(err)
	}
	if text := r.Tokenizer().Decode(pl.IDs, false); !strings.Contains(text, "<0.2 seconds>") || !strings.Contains(text, "<1.2 seconds>") {
		t.Errorf("prompt %q lacks the frames' times 0.2 and 1.2", text)
	}
	if len(pl.ClipRows) != 1 || len(pl.ClipRows[0]) != 2 {
		t.Errorf("clip rows %v, want one clip of two temporal patches", pl.ClipRows)
	}
}

// countingProcessor counts the pictures an image processor preprocesses.
type countingProcessor struct {
	imageProcessor
	n *int
}

func (p countingProcessor) Image(im media.Image) (media.Pixels, error) {
	*p.n++
	return p.imageProcessor.Image(im)
}

// TestImagePreprocessedOnce: a Qwen-VL picture, whose token count needs
// its processed size, is preprocessed once per request: the prompt's
// pass keeps the pixels for the tower.
func TestImagePreprocessedOnce(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35Entry)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	old := loadImageProcessor
	loadImageProcessor = func(dir string) (imageProcessor, error) {
		p, err := old(dir)
		return countingProcessor{p, &n}, err
	}
	t.Cleanup(func() { loadImageProcessor = old })
	r := openVision(t, towertest.Qwen35Entry, g, RunnerOptions{})
	c := g.Cases[len(g.Cases)-1]
	req := Request{Messages: c.Messages, Images: goldenImages(t, towertest.Qwen35Entry, g, c.Images), MaxTokens: 1}
	if _, err := r.Generate(context.Background(), req, func(Delta) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n != len(c.Images) {
		t.Fatalf("%d pictures preprocessed %d times", len(c.Images), n)
	}
}
