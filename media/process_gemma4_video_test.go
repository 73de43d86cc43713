package media

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gemma4Entry is the Gemma 4 vision test model, whose video_golden.json
// tools/oracle/make_gemma4_video_goldens.py writes.
var gemma4Entry = filepath.Join("..", "testdata", "models", "gemma4_vision-f32")

// TestGemma4VideoGolden decodes the entry's clip (ffmpeg) with the
// sampling its video processor asks for and runs Gemma4VideoProcessor
// over the frames: the frames transformers sampled, their times as the
// prompt writes them, and every frame's patch rows bit for bit.
func TestGemma4VideoGolden(t *testing.T) {
	needVideoFFmpeg(t)
	raw, err := os.ReadFile(filepath.Join(gemma4Entry, "video_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Videos []struct {
			File       string    `json:"file"`
			NumFrames  int       `json:"num_frames"`
			Sampled    []int     `json:"sampled_indices"`
			Timestamps []string  `json:"timestamps"`
			Grids      [][2]int  `json:"frame_grids"`
			Shape      []int     `json:"pixel_values_shape"`
			Values     []float32 `json:"pixel_values"`
		} `json:"videos"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	want := g.Videos[0]
	p, err := LoadImageProcessor(gemma4Entry)
	if err != nil {
		t.Fatal(err)
	}
	v := p.VideoProcessor
	if v == nil || v.Type != "Gemma4VideoProcessor" || v.NumFrames != want.NumFrames || v.MaxSoftTokens != 70 || v.PatchSize != 2 || !v.DoNormalize {
		t.Fatalf("video processor %+v", v)
	}
	opt, ok := v.SampleOptions()
	if !ok || opt.Sampling != SampleGemma4 {
		t.Fatalf("sample options %+v, %v", opt, ok)
	}
	clip, err := os.ReadFile(filepath.Join(gemma4Entry, want.File))
	if err != nil {
		t.Fatal(err)
	}
	frames, err := VideoFrames(context.Background(), clip, opt)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	var stamps []string
	for _, f := range frames {
		idx = append(idx, f.Index)
		stamps = append(stamps, Gemma4Timestamp(float64(f.Index)/f.FPS))
	}
	if !slices.Equal(idx, want.Sampled) || !slices.Equal(stamps, want.Timestamps) {
		t.Fatalf("frames %v at %v, want %v at %v", idx, stamps, want.Sampled, want.Timestamps)
	}
	px, err := p.Video(frames)
	if err != nil {
		t.Fatal(err)
	}
	gr := want.Grids[0]
	if !slices.Equal(px.Shape, want.Shape) || px.Grid != [3]int{len(want.Grids), gr[0], gr[1]} {
		t.Fatalf("shape %v grid %v, want %v and %d frames of %v", px.Shape, px.Grid, want.Shape, len(want.Grids), gr)
	}
	for i, w := range want.Values {
		if px.Data[i] != w {
			t.Fatalf("value %d (frame %d) is %v, want %v", i, i/(len(want.Values)/len(want.Grids)), px.Data[i], w)
		}
	}
	t.Logf("%d frames %v at %v: %v rows, bit-identical", len(frames), idx, stamps, px.Shape)
}

func TestGemma4Timestamp(t *testing.T) {
	// f"{int(s // 60):02d}:{int(s % 60):02d}" in Python
	for _, c := range []struct {
		s    float64
		want string
	}{{0, "00:00"}, {0.75, "00:00"}, {1.5, "00:01"}, {59.999, "00:59"}, {60, "01:00"}, {61.5, "01:01"},
		{119.99999999999999, "01:59"}, {3600, "60:00"}, {6000.25, "100:00"}} {
		if got := Gemma4Timestamp(c.s); got != c.want {
			t.Errorf("Gemma4Timestamp(%v) = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestSampleGemma4(t *testing.T) {
	for _, c := range []struct {
		total          int
		videoFPS, fps  float64
		num, maxFrames int
		want           []int
	}{
		// torch.arange(0, total, total / num).int()
		{10, 4, 0, 3, 64, []int{0, 3, 6}},
		{100, 30, 0, 32, 64, []int{0, 3, 6, 9, 12, 15, 18, 21, 25, 28, 31, 34, 37, 40, 43, 46, 50, 53, 56, 59, 62, 65, 68, 71, 75, 78, 81, 84, 87, 90, 93, 96}},
		{32, 30, 0, 32, 64, seq(32)},
		// fewer frames than num_frames (the reference refuses): every frame
		{20, 30, 0, 32, 64, seq(20)},
		// the server's frame limit
		{100, 30, 0, 32, 4, []int{0, 25, 50, 75}},
		// num_frames None, fps 2: int(90 / 30 · 2) = 6
		{90, 30, 2, 0, 64, []int{0, 15, 30, 45, 60, 75}},
	} {
		if got := sampleGemma4(c.total, c.videoFPS, c.fps, c.num, c.maxFrames); !slices.Equal(got, c.want) {
			t.Errorf("sampleGemma4(%d, %v, %v, %d, %d) = %v, want %v", c.total, c.videoFPS, c.fps, c.num, c.maxFrames, got, c.want)
		}
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestGemma4VideoConfig reads Gemma4VideoProcessor's keys and defaults
// and refuses what the reference refuses.
func TestGemma4VideoConfig(t *testing.T) {
	img := `"image_processor": {"image_processor_type": "Gemma4ImageProcessor"}`
	load := func(video string) (*ImageProcessor, error) {
		dir := t.TempDir()
		body := `{"processor_class": "Gemma4Processor", ` + img
		if video != "" {
			body += `, "video_processor": ` + video
		}
		if err := os.WriteFile(filepath.Join(dir, "processor_config.json"), []byte(body+"}"), 0o644); err != nil {
			t.Fatal(err)
		}
		return LoadImageProcessor(dir)
	}
	p, err := load(`{"video_processor_type": "Gemma4VideoProcessor"}`)
	if err != nil {
		t.Fatal(err)
	}
	v := p.VideoProcessor
	if v.NumFrames != 32 || v.MaxSoftTokens != 70 || v.PatchSize != 16 || v.PoolingKernelSize != 3 || !v.DoNormalize || v.Std != [3]float64{1, 1, 1} || v.TemporalPatchSize != 1 {
		t.Errorf("defaults %+v", v)
	}
	if p, err = load(`{"video_processor_type": "Gemma4VideoProcessor", "num_frames": null, "fps": 1.5}`); err != nil {
		t.Fatal(err)
	}
	if o, _ := p.VideoProcessor.SampleOptions(); o.NumFrames != 0 || o.FPS != 1.5 {
		t.Errorf("num_frames null, fps 1.5: %+v", o)
	}
	if p, err = load(`{"video_processor_type": "Gemma4VideoProcessor", "do_sample_frames": false}`); err != nil {
		t.Fatal(err)
	}
	if o, _ := p.VideoProcessor.SampleOptions(); o.NumFrames < 1<<20 {
		t.Errorf("do_sample_frames false: %+v, want every frame", o)
	}
	if p, err = load(""); err != nil || p.VideoProcessor == nil || p.VideoProcessor.Type != "Gemma4VideoProcessor" {
		t.Errorf("no video processor config: %+v, %v", p, err)
	}
	for _, c := range []struct{ video, want string }{
		{`{"video_processor_type": "Gemma4VideoProcessor", "max_soft_tokens": 100}`, "max_soft_tokens 100"},
		{`{"video_processor_type": "Gemma4VideoProcessor", "num_frames": 8, "fps": 2}`, "num_frames and fps"},
		{`{"video_processor_type": "Gemma4VideoProcessor", "num_frames": -1}`, "num_frames -1"},
		{`{"video_processor_type": "Gemma4VideoProcessor", "fps": 0}`, "fps 0"},
	} {
		if _, err := load(c.video); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.video, err, c.want)
		}
	}
}

// TestGemma4VideoFrames: frames of another size than frame 0 are
// refused, and a frame the size of the budget is not resized.
func TestGemma4VideoFrames(t *testing.T) {
	p, err := LoadImageProcessor(gemma4Entry)
	if err != nil {
		t.Fatal(err)
	}
	f := Frame{Image: Image{Width: 48, Height: 48, Pix: make([]uint8, 48*48*3)}}
	for i := range f.Pix {
		f.Pix[i] = uint8(i * 7)
	}
	px, err := p.Video([]Frame{f, f})
	if err != nil {
		t.Fatal(err)
	}
	// 48×48 is already 24×24 patches of 2 (64 soft tokens ≤ 70)
	if px.Grid != [3]int{2, 24, 24} || px.Shape[0] != 2*24*24 || px.Shape[1] != 12 {
		t.Fatalf("grid %v shape %v", px.Grid, px.Shape)
	}
	if px.Data[0] != float32(f.Pix[0])/255 || px.Data[3] != float32(f.Pix[3])/255 || px.Data[24*24*12] != px.Data[0] {
		t.Errorf("values %v %v (second frame %v)", px.Data[0], px.Data[3], px.Data[24*24*12])
	}
	odd := Frame{Image: Image{Width: 30, Height: 30, Pix: make([]uint8, 30*30*3)}}
	if _, err := p.Video([]Frame{f, odd}); err == nil || !strings.Contains(err.Error(), "frame 1 is 30×30") {
		t.Errorf("frames of two sizes: %v", err)
	}
}
