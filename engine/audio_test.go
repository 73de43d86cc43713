package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"hearth/engine/tower/towertest"
	"hearth/internal/testenv"
	"hearth/media"
)

// goldenSound is the audio golden's clip, decoded as a request's would be.
func goldenSound(t *testing.T, g *towertest.AudioGolden) media.Audio {
	t.Helper()
	raw, err := os.ReadFile(towertest.RepoPath(g.Clip.File))
	if err != nil {
		t.Fatal(err)
	}
	a, err := media.DecodeAudio(context.Background(), raw, media.AudioLimits{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestGenerateWithAudio runs the golden conversation through Generate
// from the clip's WAV: the chat template, the processor's expansion (its
// soft-token count), the feature extractor, the tower, the splice and the
// decode loop give transformers' greedy ids, on both backends, in one
// pass or cut into chunks.
func TestGenerateWithAudio(t *testing.T) {
	g, err := towertest.LoadAudio()
	if err != nil {
		t.Fatal(err)
	}
	clip := goldenSound(t, g)
	c := g.Cases[0]
	want := c.GreedyIDs
	for _, backend := range []string{"cpu", "gpu"} {
		for _, chunk := range []int{0, 7} {
			opt := RunnerOptions{Options: Options{Backend: backend, ChunkTokens: chunk}}
			r, err := Open(towertest.Dir(towertest.Gemma4AudioEntry), opt)
			if backend == "gpu" {
				testenv.Need(t, "a gpu backend", err == nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if info := r.Info(); !strings.Contains(strings.Join(info.Capabilities, ","), "audio") || info.AudioSeconds != 30 {
				t.Fatalf("capabilities %v, audio seconds %v", info.Capabilities, info.AudioSeconds)
			}
			req := Request{Messages: c.Messages, Audio: []media.Audio{clip}, MaxTokens: len(c.GreedyIDs), Logprobs: true}
			pl, err := r.Prompter().PromptMedia(context.Background(), &req)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(pl.IDs, c.PromptIDs) {
				t.Fatalf("prompt ids\n%v, want\n%v", pl.IDs, c.PromptIDs)
			}
			if row := c.AudioRow(g.SpecialTokens["<|audio|>"]); len(pl.AudioRows) != 1 || pl.AudioRows[0] != row || pl.Audio[0].Cut {
				t.Fatalf("audio rows %v (cut %v), want [%d]", pl.AudioRows, pl.Audio[0].Cut, row)
			}
			var got []int32
			u, err := r.Generate(context.Background(), req, func(d Delta) error {
				for _, lp := range d.Logprobs {
					got = append(got, lp.ID)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !equal(got, want) || u.PromptTokens != len(c.PromptIDs) {
				t.Fatalf("%s/chunk %d: ids %v after %d prompt tokens, want %v after %d", backend, chunk, got, u.PromptTokens, want, len(c.PromptIDs))
			}
			r.Close()
		}
	}
}

// TestAudioRequestErrors: audio to a model without an audio tower names
// the model; a count of clips the conversation does not hold, audio with
// a plain prompt, or a clip too short to hear are the request's fault.
func TestAudioRequestErrors(t *testing.T) {
	g, err := towertest.LoadAudio()
	if err != nil {
		t.Fatal(err)
	}
	clip := goldenSound(t, g)
	r, err := Open(towertest.Dir(towertest.Gemma4AudioEntry), RunnerOptions{Options: Options{Backend: "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	text, err := Open(towertest.Dir(towertest.Gemma3Entry), RunnerOptions{Options: Options{Backend: "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer text.Close()
	two := json.RawMessage(`[{"role":"user","content":[{"type":"audio"},{"type":"audio"},{"type":"text","text":"Hi"}]}]`)
	short := media.Audio{Rate: 16000, Samples: make([]float32, 100)}
	for _, tt := range []struct {
		name string
		r    *Runner
		req  Request
		msg  string
	}{
		{"no tower", text, Request{Messages: g.Cases[0].Messages, Audio: []media.Audio{clip}, MaxTokens: 1}, `model "gemma3_vision-f32" takes no audio`},
		{"count", r, Request{Messages: two, Audio: []media.Audio{clip}, MaxTokens: 1}, "2 audio parts but the request holds 1 clips"},
		{"plain prompt", r, Request{Prompt: "Hi", Audio: []media.Audio{clip}, MaxTokens: 1}, "audio goes in messages"},
		{"prompt ids", r, Request{PromptIDs: []int32{1, 2}, Audio: []media.Audio{clip}, MaxTokens: 1}, "audio goes in messages"},
		{"too short", r, Request{Messages: g.Cases[0].Messages, Audio: []media.Audio{short}, MaxTokens: 1}, "too short to hear"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.r.Generate(context.Background(), tt.req, func(Delta) error { return nil })
			var re *RequestError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v, want a request error about %q", err, tt.msg)
			}
		})
	}
}

// TestAudioResampled: a clip at another rate (48 kHz float WAV, 1 s) is
// resampled to the tower's 16 kHz before its features: 99 frames, 25
// soft tokens between <|audio> and <audio|>.
func TestAudioResampled(t *testing.T) {
	raw, err := os.ReadFile(towertest.RepoPath("testdata/media/audio/noise48k.wav"))
	if err != nil {
		t.Fatal(err)
	}
	clip, err := media.DecodeAudio(context.Background(), raw, media.AudioLimits{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := towertest.LoadAudio()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(towertest.Dir(towertest.Gemma4AudioEntry), RunnerOptions{Options: Options{Backend: "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	req := Request{Messages: g.Cases[0].Messages, Audio: []media.Audio{clip}, MaxTokens: 2}
	pl, err := r.Prompter().PromptMedia(context.Background(), &req)
	if err != nil {
		t.Fatal(err)
	}
	h := pl.Audio[0]
	if clip.Rate != 48000 || h.Features.Frames != 99 || h.Tokens != 25 || h.Cut {
		t.Fatalf("%d Hz clip: %d frames, %d tokens (cut %v); want 99 frames, 25 tokens", clip.Rate, h.Features.Frames, h.Tokens, h.Cut)
	}
	row, tok := pl.AudioRows[0], g.SpecialTokens["<|audio|>"]
	if pl.IDs[row-1] != g.SpecialTokens["<|audio>"] || pl.IDs[row+25] != g.SpecialTokens["<audio|>"] || pl.IDs[row] != tok || pl.IDs[row+24] != tok {
		t.Fatalf("ids around row %d: %v", row, pl.IDs[row-1:row+26])
	}
	if _, err := r.Generate(context.Background(), req, func(Delta) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// TestHearCuts: a clip past 30 s is cut there, as Gemma4AudioFeatureExtractor
// truncates it (max_length 480000), and says so: 750 soft tokens.
func TestHearCuts(t *testing.T) {
	r, err := Open(towertest.Dir(towertest.Gemma4AudioEntry), RunnerOptions{Options: Options{Backend: "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tt := range []struct {
		secs   float64
		tokens int
		cut    bool
	}{{31, 750, true}, {30, 750, false}, {0.5, 13, false}} {
		clip := media.Audio{Rate: 16000, Samples: make([]float32, int(tt.secs*16000))}
		for i := range clip.Samples {
			clip.Samples[i] = float32(i%50) / 100
		}
		h, err := Hear(r.model.audio, clip)
		if err != nil || h.Tokens != tt.tokens || h.Cut != tt.cut {
			t.Errorf("%v s: %d tokens, cut %v, %v; want %d, %v", tt.secs, h.Tokens, h.Cut, err, tt.tokens, tt.cut)
		}
	}
}
