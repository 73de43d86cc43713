package engine

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/tower/towertest"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
	"hearth/media"
)

// goldenPixels is an image processor for the tests that hands each golden
// picture the processor's pixel_values the oracle recorded for it (found
// by its size), for when the checkpoint's own processor cannot be loaded.
type goldenPixels struct{ g *towertest.Golden }

func (p goldenPixels) Image(im media.Image) (media.Pixels, error) {
	for _, gi := range p.g.Images {
		if gi.Width == im.Width && gi.Height == im.Height {
			return gi.Pixels(), nil
		}
	}
	return media.Pixels{}, errors.New("not a golden picture")
}

// openVision opens a vision entry (towertest.Gemma3Entry when "") on the
// cpu backend, with its own image processor when media can load it, else
// the golden pixels.
func openVision(t *testing.T, entry string, g *towertest.Golden, opt RunnerOptions) *Runner {
	t.Helper()
	if entry == "" {
		entry = towertest.Gemma3Entry
	}
	dir := towertest.Dir(entry)
	if _, err := loadImageProcessor(dir); err != nil {
		t.Logf("the checkpoint's image processor does not load (%v): the pictures get the golden pixel values", err)
		old := loadImageProcessor
		loadImageProcessor = func(string) (imageProcessor, error) { return goldenPixels{g}, nil }
		t.Cleanup(func() { loadImageProcessor = old })
	}
	if opt.Backend == "" {
		opt.Backend = "cpu"
	}
	r, err := Open(dir, opt)
	if opt.Backend == "gpu" {
		testenv.Need(t, "a gpu backend", err == nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func goldenImages(t *testing.T, entry string, g *towertest.Golden, idx []int) []media.Image {
	t.Helper()
	var out []media.Image
	for _, i := range idx {
		raw, err := os.ReadFile(filepath.Join(towertest.Dir(entry), g.Images[i].File))
		if err != nil {
			t.Fatal(err)
		}
		im, err := media.DecodeImage(raw, media.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, im)
	}
	return out
}

// TestGenerateWithImages runs each golden conversation through Generate:
// the chat template, the processor's expansion of each picture, the
// tower, the splice and the decode loop give transformers' greedy ids,
// on the host sampler (ids from the logprobs) and on the backend's greedy
// decode (the text of those ids; on the gpu backend it queues the
// prompt's last pass ahead), with prefill chunks that end before a
// picture.
func TestGenerateWithImages(t *testing.T) {
	for _, entry := range []string{towertest.Gemma3Entry, towertest.Qwen35Entry, towertest.Qwen35MoeEntry, towertest.Gemma4Entry} {
		for _, backend := range []string{"cpu", "gpu"} {
			t.Run(entry+"/"+backend, func(t *testing.T) { generateWithImages(t, entry, backend) })
		}
	}
}

func generateWithImages(t *testing.T, entry, backend string) {
	g, err := towertest.Load(entry)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{0, 7} {
		r := openVision(t, entry, g, RunnerOptions{Options: Options{Backend: backend, ChunkTokens: chunk}})
		if !strings.Contains(strings.Join(r.Info().Capabilities, ","), "vision") {
			t.Fatalf("capabilities %v lack vision", r.Info().Capabilities)
		}
		for _, c := range g.Cases {
			req := Request{Messages: c.Messages, Images: goldenImages(t, entry, g, c.Images), MaxTokens: len(c.GreedyIDs)}
			ids, rows, err := r.Prompter().PromptImages(context.Background(), &req)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(ids, c.PromptIDs) {
				t.Fatalf("%s: prompt ids\n%v, want\n%v", c.Name, ids, c.PromptIDs)
			}
			if want := c.ImageRows(); !equal(rows, want) {
				t.Fatalf("%s: image rows %v, want %v", c.Name, rows, want)
			}

			req.Logprobs = true
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
			if !equal(got, c.GreedyIDs) || u.PromptTokens != len(c.PromptIDs) {
				t.Fatalf("%s (chunk %d, host sampling): ids %v after %d prompt tokens, want %v after %d", c.Name, chunk, got, u.PromptTokens, c.GreedyIDs, len(c.PromptIDs))
			}

			req.Logprobs = false
			var text strings.Builder
			if _, err := r.Generate(context.Background(), req, func(d Delta) error {
				text.WriteString(d.Content)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if want := r.Tokenizer().Decode(c.GreedyIDs, true); text.String() != want {
				t.Fatalf("%s (chunk %d, device greedy): %q, want %q", c.Name, chunk, text.String(), want)
			}
		}
	}
}

// TestImageRequestErrors: pictures to a model without a vision tower name
// the model; a count of pictures the conversation does not hold, or
// pictures without messages, are the request's fault.
func TestImageRequestErrors(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma3Entry)
	if err != nil {
		t.Fatal(err)
	}
	img := goldenImages(t, towertest.Gemma3Entry, g, []int{0})
	tiny, err := Open(filepath.Join(testmodels.Root(), "chat-tiny"), RunnerOptions{Options: Options{Backend: "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tiny.Close()
	if strings.Contains(strings.Join(tiny.Info().Capabilities, ","), "vision") {
		t.Errorf("chat-tiny claims vision: %v", tiny.Info().Capabilities)
	}
	msgs := []byte(`[{"role":"user","content":[{"type":"image"},{"type":"text","text":"hi"}]}]`)
	_, err = tiny.Generate(context.Background(), Request{Messages: msgs, Images: img, MaxTokens: 2}, func(Delta) error { return nil })
	var re *RequestError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), `"chat-tiny" takes no images`) {
		t.Errorf("chat-tiny with an image: %v", err)
	}

	r := openVision(t, "", g, RunnerOptions{})
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{"two parts, one image", Request{Messages: []byte(`[{"role":"user","content":[{"type":"image"},{"type":"image"},{"type":"text","text":"hi"}]}]`), Images: img}, "2 image parts but the request holds 1"},
		{"no part", Request{Messages: []byte(`[{"role":"user","content":"hi"}]`), Images: img}, "0 image parts"},
		{"plain prompt", Request{Prompt: "hi", Images: img}, "images go in messages"},
	} {
		tc.req.MaxTokens = 2
		_, err := r.Generate(context.Background(), tc.req, func(Delta) error { return nil })
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a request error saying %q", tc.name, err, tc.want)
		}
	}
	// text alone still works, through the same model
	if _, err := r.Generate(context.Background(), Request{Messages: []byte(`[{"role":"user","content":"hi"}]`), MaxTokens: 2}, func(Delta) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestImageProcessorMatchesGolden: the checkpoint's image processor, as
// media loads it from the processor config transformers 5.17 wrote, gives
// the golden pictures the processor's pixel_values (one picture at the
// tower's size, one resized; Qwen-VL's grid_thw too).
func TestImageProcessorMatchesGolden(t *testing.T) {
	for _, entry := range []string{towertest.Gemma3Entry, towertest.Qwen35Entry, towertest.Qwen35MoeEntry, towertest.Gemma4Entry} {
		t.Run(entry, func(t *testing.T) { imageProcessorMatchesGolden(t, entry) })
	}
}

func imageProcessorMatchesGolden(t *testing.T, entry string) {
	g, err := towertest.Load(entry)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadImageProcessor(towertest.Dir(entry))
	if err != nil {
		t.Fatal(err)
	}
	for i, im := range goldenImages(t, entry, g, []int{0, 1}) {
		px, err := p.Image(im)
		if err != nil {
			t.Fatal(err)
		}
		want := g.Images[i]
		if !equal(px.Shape, want.PixelShape) || px.Grid != want.Grid {
			t.Fatalf("image %d: shape %v grid %v, want %v grid %v", i, px.Shape, px.Grid, want.PixelShape, want.Grid)
		}
		worst := 0.0
		for j := range want.PixelValues {
			worst = max(worst, math.Abs(float64(px.Data[j]-want.PixelValues[j])))
		}
		if worst > 1e-6 {
			t.Fatalf("image %d (%dx%d): pixel values off by up to %.3g", i, im.Width, im.Height, worst)
		}
		t.Logf("image %d (%dx%d): max |Δ| %.3g", i, im.Width, im.Height, worst)
	}
}
