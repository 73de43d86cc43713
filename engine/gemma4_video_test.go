package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/tower/towertest"
	"hearth/media"
)

// gemma4Clip decodes the Gemma 4 entry's clip as a server does (ffmpeg
// here, sampled by the rule the runner reports: the video processor's
// num_frames), checking the frames the reference sampled.
func gemma4Clip(t *testing.T, r *Runner, vg *towertest.Gemma4VideoGolden) []media.Frame {
	t.Helper()
	v := vg.Videos[0]
	s := r.Info().VideoSampling
	if s == nil || s.Sampling != media.SampleGemma4 || s.NumFrames != v.NumFrames {
		t.Fatalf("video sampling %+v, want Gemma 4's with num_frames %d", s, v.NumFrames)
	}
	return sampledClip(t, filepath.Join(towertest.Dir(towertest.Gemma4Entry), v.File), *s, v.Sampled)
}

// TestGenerateWithGemma4Video runs the golden video conversation through
// Generate: the clip decoded from its file and sampled as
// Gemma4VideoProcessor samples, the video processor, the prompt's frames
// (each "mm:ss <|image>" + soft tokens + "<image|>"), the tower frame by
// frame and the decode loop give transformers' prompt ids and greedy
// ids, on the cpu and gpu backends, with prefill chunks that end before
// each frame.
func TestGenerateWithGemma4Video(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma4Entry)
	if err != nil {
		t.Fatal(err)
	}
	vg, err := towertest.LoadGemma4Video()
	if err != nil {
		t.Fatal(err)
	}
	var frames []media.Frame
	for _, backend := range []string{"cpu", "gpu"} {
		for _, chunk := range []int{0, 7} {
			t.Run(fmt.Sprintf("%s/chunk%d", backend, chunk), func(t *testing.T) {
				r := openVision(t, towertest.Gemma4Entry, g, RunnerOptions{Options: Options{Backend: backend, ChunkTokens: chunk}})
				if !strings.Contains(strings.Join(r.Info().Capabilities, ","), "video") {
					t.Fatalf("capabilities %v lack video", r.Info().Capabilities)
				}
				if frames == nil {
					frames = gemma4Clip(t, r, vg)
				}
				for _, c := range vg.Cases {
					req := Request{Messages: c.Messages, Videos: [][]media.Frame{frames}, MaxTokens: len(c.GreedyIDs), Logprobs: true}
					wantGoldenAnswer(t, r, req, c.Name, c.PromptIDs, c.GreedyIDs, c.ExpandedText)
				}
			})
		}
	}
}

// TestGemma4VideoLimits: a clip whose frames' soft tokens do not fit the
// context is a *ContextError before any frame goes through the tower;
// frames the processor refuses, or a count of clips the conversation
// does not hold, are the request's fault; the prompt writes each frame's
// time.
func TestGemma4VideoLimits(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma4Entry)
	if err != nil {
		t.Fatal(err)
	}
	r := openVision(t, towertest.Gemma4Entry, g, RunnerOptions{})
	frame := media.Image{Width: 50, Height: 30, Pix: make([]uint8, 50*30*3)}
	clip := func(n int, fps float64, step int) []media.Frame {
		var c []media.Frame
		for i := range n {
			c = append(c, media.Frame{Image: frame, Index: i * step, FPS: fps})
		}
		return c
	}
	video := []byte(`[{"role":"user","content":[{"type":"video"},{"type":"text","text":"hi"}]}]`)
	// two frames a minute apart: 60 soft tokens each
	pl, err := r.Prompter().PromptMedia(context.Background(), &Request{Messages: video, Videos: [][]media.Frame{clip(2, 1, 61)}})
	if err != nil {
		t.Fatal(err)
	}
	if text := r.Tokenizer().Decode(pl.IDs, false); !strings.Contains(text, "00:00 <|image>") || !strings.Contains(text, "<image|> 01:01 <|image>") {
		t.Errorf("prompt %q lacks the frames' times 00:00 and 01:01", text)
	}
	if len(pl.ClipRows) != 1 || len(pl.ClipRows[0]) != 2 {
		t.Errorf("clip rows %v, want one clip of two frames", pl.ClipRows)
	}
	var ce *ContextError
	_, err = r.Generate(context.Background(), Request{Messages: video, Videos: [][]media.Frame{clip(5, 4, 1)}, MaxTokens: 2}, func(Delta) error { return nil })
	if !errors.As(err, &ce) || ce.PromptTokens < 300 {
		t.Errorf("five frames of 60 soft tokens in a context of %d: %v, want a ContextError", r.Info().ContextTokens, err)
	}
	odd := clip(2, 4, 1)
	odd[1].Image = media.Image{Width: 16, Height: 16, Pix: make([]uint8, 16*16*3)}
	var re *RequestError
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"two parts, one clip", Request{Messages: []byte(`[{"role":"user","content":[{"type":"video"},{"type":"video"}]}]`), Videos: [][]media.Frame{clip(2, 4, 1)}}, "2 video parts but the request holds 1"},
		{"frames of two sizes", Request{Messages: video, Videos: [][]media.Frame{odd}}, "video 1: "},
		{"no frames", Request{Messages: video, Videos: [][]media.Frame{{}}}, "video 1: "},
	} {
		tc.req.MaxTokens = 2
		_, err := r.Generate(context.Background(), tc.req, func(Delta) error { return nil })
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a request error saying %q", tc.name, err, tc.want)
		}
	}
}
