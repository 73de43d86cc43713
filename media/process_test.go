package media

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeGoldenConfig writes a checkpoint directory holding the config the
// oracle used; backend "pil" names the …Pil class, as a saved PIL-backend
// processor does.
func writeGoldenConfig(t testing.TB, g *goldenManifest, name, backend string) string {
	t.Helper()
	c, ok := g.Configs[name]
	if !ok {
		t.Fatalf("no config %q in the goldens", name)
	}
	dir := t.TempDir()
	pre := c.Preprocessor
	if backend == "pil" {
		var m map[string]any
		if err := json.Unmarshal(pre, &m); err != nil {
			t.Fatal(err)
		}
		m["image_processor_type"] = strings.TrimSuffix(m["image_processor_type"].(string), "Fast") + "Pil"
		pre, _ = json.Marshal(m)
	}
	if err := os.WriteFile(filepath.Join(dir, preprocessorConfigName), pre, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(c.Video) > 0 && string(c.Video) != "null" {
		if err := os.WriteFile(filepath.Join(dir, videoConfigName), c.Video, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// goldenInput is the RGB the oracle fed the processor: Pillow's decode,
// which for every picture but the JPEGs is ours bit for bit (checked by
// TestDecodeImageGolden); the JPEGs' stored RGB is used as it is.
func goldenInput(t testing.TB, g *goldenManifest, file string) Image {
	t.Helper()
	want := g.byFileName[file]
	if lossy(file) {
		return Image{Width: want.Width, Height: want.Height, Pix: g.decodedRGB(file)}
	}
	img, err := DecodeImage(readMediaFile(t, file), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// compareGolden checks pixel_values against a golden case: the stored
// values (all of them, or every stride-th) within 1e-6, and the sum and
// the position-weighted sum of all of them within 1e-3, which any single
// uint8 off by one after the resize would exceed (a level moves a value
// by at least 1/255/0.5 ≈ 0.0078). It reports whether the arrays are
// bit-identical.
func compareGolden(t *testing.T, c goldenCase, got Pixels) (maxErr float64, exact bool) {
	t.Helper()
	wantShape := c.Shape
	if len(wantShape) == 4 && wantShape[0] == 1 { // [1, 3, H, W]
		wantShape = wantShape[1:]
	}
	if !slices.Equal(got.Shape, wantShape) {
		t.Fatalf("shape %v, reference %v", got.Shape, c.Shape)
	}
	if c.Grid != nil && !slices.Equal(got.Grid[:], c.Grid) {
		t.Fatalf("grid %v, reference %v", got.Grid, c.Grid)
	}
	if len(got.Data) != c.N {
		t.Fatalf("%d values, reference %d", len(got.Data), c.N)
	}
	worst := -1
	for j, want := range c.Values {
		i := j * c.Stride
		if d := math.Abs(float64(got.Data[i]) - float64(want)); d > maxErr || math.IsNaN(d) {
			maxErr, worst = d, i
		}
	}
	if maxErr > 1e-6 {
		t.Errorf("max |diff| %.3g at value %d (of %d; %d compared): got %v, reference %v",
			maxErr, worst, c.N, c.Count, got.Data[worst], c.Values[worst/c.Stride])
	}
	var sum, wsum float64
	buf := make([]byte, 4*len(got.Data))
	for i, v := range got.Data {
		sum += float64(v)
		wsum += float64(v) * float64(i%13+1)
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	if math.Abs(sum-c.Sum) > 1e-3 || math.Abs(wsum-c.WSum) > 1e-3 {
		t.Errorf("sums %.6f / %.6f, reference %.6f / %.6f: some value elsewhere differs", sum, wsum, c.Sum, c.WSum)
	}
	h := sha256.Sum256(buf)
	return maxErr, hex.EncodeToString(h[:]) == c.SHA256
}

// TestProcessorGolden runs every golden case (each picture through Gemma 3
// at 64×64 and 896×896, SigLIP at 48×40 bicubic, Qwen2.5-VL with small
// pixel bounds and with its real ones, Qwen3-VL; the PIL backend too where
// the oracle ran it; and the Qwen-VL videos) and prints the max error.
func TestProcessorGolden(t *testing.T) {
	g := loadGolden(t)
	procs := map[string]*ImageProcessor{}
	exactCount, total := 0, 0
	worstAll := 0.0
	for _, c := range g.Cases {
		name := c.Config + "/" + c.Backend + "/" + c.Kind + "/" + c.Image
		t.Run(name, func(t *testing.T) {
			if c.Error != "" {
				t.Skipf("the reference failed: %s", c.Error)
			}
			key := c.Config + "/" + c.Backend
			p := procs[key]
			if p == nil {
				var err error
				p, err = LoadImageProcessor(writeGoldenConfig(t, g, c.Config, c.Backend))
				if err != nil {
					t.Fatal(err)
				}
				procs[key] = p
			}
			img := goldenInput(t, g, c.Image)
			var got Pixels
			var err error
			if c.Kind == "video" {
				got, err = p.Video(goldenFrames(img))
			} else {
				got, err = p.Image(img)
			}
			if err != nil {
				t.Fatal(err)
			}
			maxErr, exact := compareGolden(t, c, got)
			total++
			if exact {
				exactCount++
			}
			worstAll = max(worstAll, maxErr)
			t.Logf("max |diff| %.3g over %d of %d values; bit-identical: %v", maxErr, c.Count, c.N, exact)
		})
	}
	t.Logf("%d cases: max |diff| %.3g; %d bit-identical to transformers %s", total, worstAll, exactCount, g.Versions["transformers"])
}

// goldenFrames are the oracle's video: three 200×150 crops of
// rgb_640x481.png at (13k, 7k).
func goldenFrames(img Image) []Frame {
	var fs []Frame
	for k := 0; k < 3; k++ {
		f := Image{Width: 200, Height: 150, Pix: make([]uint8, 3*200*150)}
		for y := 0; y < 150; y++ {
			src := img.Pix[3*((k*7+y)*img.Width+k*13):]
			copy(f.Pix[3*y*200:3*(y+1)*200], src[:3*200])
		}
		fs = append(fs, Frame{Image: f})
	}
	return fs
}

func TestSmartResize(t *testing.T) {
	cases := []struct{ h, w, factor, min, max, wh, ww int }{
		{1, 1, 28, 3136, 12544, 56, 56},
		{3, 7, 28, 3136, 12544, 56, 112},
		{481, 640, 28, 3136, 12845056, 476, 644},
		{481, 640, 28, 3136, 12544, 84, 112},
		{42, 42, 28, 0, 1 << 20, 56, 56}, // 1.5 rounds to 2 (half to even)
		{70, 70, 28, 0, 1 << 20, 56, 56}, // 2.5 rounds to 2
	}
	for _, c := range cases {
		h, w, err := smartResize(c.h, c.w, c.factor, c.min, c.max)
		if err != nil || h != c.wh || w != c.ww {
			t.Errorf("smartResize(%d, %d): %d×%d %v, want %d×%d", c.h, c.w, h, w, err, c.wh, c.ww)
		}
	}
	if _, _, err := smartResize(1, 201, 28, 3136, 12544); !errors.Is(err, ErrMedia) {
		t.Errorf("aspect ratio 201: %v", err)
	}
	if _, _, err := smartResizeVideo(1, 100, 100, 2, 32, 4096, 1<<24); !errors.Is(err, ErrMedia) {
		t.Errorf("one frame for Qwen3-VL: %v", err)
	}
}

func writeConfigs(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadImageProcessor(t *testing.T) {
	// transformers 5.17's save_pretrained of a whole processor: one
	// processor_config.json, the image and video processors nested.
	nested := `{"image_processor": {"image_processor_type": "Qwen2VLImageProcessor", "size": {"longest_edge": 12544, "shortest_edge": 3136},
	  "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2, "resample": 3, "rescale_factor": 0.00392156862745098,
	  "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711], "do_convert_rgb": true},
	 "video_processor": {"video_processor_type": "Qwen2VLVideoProcessor", "size": {"longest_edge": 9999, "shortest_edge": 100}, "do_sample_frames": false},
	 "processor_class": "Qwen2_5_VLProcessor"}`
	p, err := LoadImageProcessor(writeConfigs(t, map[string]string{processorConfigName: nested}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != "Qwen2VLImageProcessor" || p.MinPixels != 3136 || p.MaxPixels != 12544 || p.VideoProcessor == nil ||
		p.VideoProcessor.MaxPixels != 9999 || p.VideoProcessor.MinPixels != 100 || p.VideoProcessor.PatchSize != 14 {
		t.Errorf("nested: %+v video %+v", p, p.VideoProcessor)
	}
	// The older layout: processor_config.json without the image processor.
	p, err = LoadImageProcessor(writeConfigs(t, map[string]string{
		processorConfigName:    `{"image_seq_length": 256, "processor_class": "Gemma3Processor"}`,
		preprocessorConfigName: `{"image_processor_type": "Gemma3ImageProcessor", "size": {"height": 896, "width": 896}, "resample": 2, "do_pan_and_scan": null, "do_convert_rgb": null}`,
	}))
	if err != nil || p.Type != "Gemma3ImageProcessor" || p.Height != 896 || p.Resample != 2 || p.VideoProcessor != nil {
		t.Errorf("gemma: %+v %v", p, err)
	}
	// min_pixels/max_pixels override size; the video processor falls back
	// to the image file, as AutoVideoProcessor does.
	p, err = LoadImageProcessor(writeConfigs(t, map[string]string{
		preprocessorConfigName: `{"image_processor_type": "Qwen2VLImageProcessorFast", "size": {"shortest_edge": 1, "longest_edge": 2}, "min_pixels": 3136, "max_pixels": 12845056}`,
	}))
	if err != nil || p.MinPixels != 3136 || p.MaxPixels != 12845056 || p.Backend != "torchvision" ||
		p.VideoProcessor == nil || p.VideoProcessor.MaxPixels != 12845056 || p.VideoProcessor.Type != "Qwen2VLVideoProcessor" {
		t.Errorf("fallback: %+v %v", p, err)
	}

	bad := map[string]map[string]string{
		"no config":       {},
		"unknown type":    {preprocessorConfigName: `{"image_processor_type": "LlavaNextImageProcessor"}`},
		"siglip2":         {preprocessorConfigName: `{"image_processor_type": "Siglip2ImageProcessor"}`},
		"no type":         {preprocessorConfigName: `{"size": {"height": 3, "width": 3}}`},
		"pan and scan":    {preprocessorConfigName: `{"image_processor_type": "Gemma3ImageProcessor", "do_pan_and_scan": true}`},
		"nearest":         {preprocessorConfigName: `{"image_processor_type": "SiglipImageProcessor", "resample": 0}`},
		"bad json":        {preprocessorConfigName: `{"image_processor_type": `},
		"not an object":   {preprocessorConfigName: `[1, 2]`},
		"shortest only":   {preprocessorConfigName: `{"image_processor_type": "SiglipImageProcessor", "size": {"shortest_edge": 224}}`},
		"zero std":        {preprocessorConfigName: `{"image_processor_type": "SiglipImageProcessor", "image_std": [0.5, 0, 0.5]}`},
		"two means":       {preprocessorConfigName: `{"image_processor_type": "SiglipImageProcessor", "image_mean": [0.5, 0.5]}`},
		"bounds":          {preprocessorConfigName: `{"image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 100, "max_pixels": 10}`},
		"patch 0":         {preprocessorConfigName: `{"image_processor_type": "Qwen2VLImageProcessor", "patch_size": 0}`},
		"unknown video":   {preprocessorConfigName: `{"image_processor_type": "Qwen2VLImageProcessor"}`, videoConfigName: `{"video_processor_type": "LlavaOnevisionVideoProcessor"}`},
		"huge config":     {preprocessorConfigName: `{"image_processor_type": "SiglipImageProcessor", "pad": "` + strings.Repeat("x", maxConfigBytes) + `"}`},
		"bad nested":      {processorConfigName: `{"image_processor": 7}`},
		"broken nesting":  {processorConfigName: `{"image_processor": `},
		"huge fixed size": {preprocessorConfigName: `{"image_processor_type": "SiglipImageProcessor", "size": {"height": 100000, "width": 3}}`},
	}
	for name, files := range bad {
		if _, err := LoadImageProcessor(writeConfigs(t, files)); err == nil {
			t.Errorf("%s: loaded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestProcessorInputErrors(t *testing.T) {
	p, err := LoadImageProcessor(writeConfigs(t, map[string]string{preprocessorConfigName: `{"image_processor_type": "Gemma3ImageProcessor"}`}))
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range []Image{{}, {Width: 2, Height: 2, Pix: make([]uint8, 5)}, {Width: -1, Height: 3}} {
		if _, err := p.Image(img); err == nil {
			t.Errorf("%d×%d with %d bytes: no error", img.Width, img.Height, len(img.Pix))
		}
	}
	if _, err := p.Video([]Frame{{Image: Image{Width: 1, Height: 1, Pix: make([]uint8, 3)}}}); err == nil {
		t.Error("Gemma 3 took a video")
	}
	q, err := LoadImageProcessor(writeConfigs(t, map[string]string{preprocessorConfigName: `{"image_processor_type": "Qwen2VLImageProcessor"}`}))
	if err != nil {
		t.Fatal(err)
	}
	one := Image{Width: 2, Height: 2, Pix: make([]uint8, 12)}
	two := Image{Width: 3, Height: 2, Pix: make([]uint8, 18)}
	if _, err := q.Video(nil); err == nil {
		t.Error("no frames: no error")
	}
	if _, err := q.Video([]Frame{{Image: one}, {Image: two}}); err == nil {
		t.Error("frames of two sizes: no error")
	}
	if _, err := q.Image(Image{Width: 1, Height: 300, Pix: make([]uint8, 900)}); !errors.Is(err, ErrMedia) {
		t.Errorf("aspect ratio 300: %v", err)
	}
	// One frame is padded to temporal_patch_size by repeating it.
	px, err := q.Video([]Frame{{Image: one}})
	if err != nil || px.Grid[0] != 1 {
		t.Errorf("one frame: grid %v %v", px.Grid, err)
	}
}

// FuzzLoadImageProcessor feeds the config loader arbitrary JSON (as
// preprocessor_config.json, and nested in processor_config.json): it must
// load or refuse, never panic, and what it loads must process a small
// picture and, for Qwen-VL, a short clip into a consistently shaped
// result.
func FuzzLoadImageProcessor(f *testing.F) {
	g := loadGolden(f)
	for _, c := range g.Configs {
		f.Add([]byte(c.Preprocessor), false)
		if len(c.Video) > 0 {
			f.Add([]byte(c.Video), true)
		}
	}
	f.Add([]byte(`{"image_processor_type": "Gemma3ImageProcessor", "do_pan_and_scan": true}`), false)
	f.Add([]byte(`{"image_processor_type": "SiglipImageProcessorPil", "size": {"height": 7, "width": 3}, "resample": 2, "image_mean": 0.3, "do_normalize": false}`), false)
	f.Add([]byte(`{"image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 64, "max_pixels": 300, "patch_size": 2, "merge_size": 2, "temporal_patch_size": 3, "do_rescale": false}`), true)
	f.Add([]byte(`{"processor_class": "Qwen3VLProcessor", "size": {"shortest_edge": 16, "longest_edge": 4096}, "patch_size": 4}`), true)
	img := Image{Width: 5, Height: 3, Pix: make([]uint8, 45)}
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 37)
	}
	f.Fuzz(func(t *testing.T, cfg []byte, nest bool) {
		dir := t.TempDir()
		name, body := preprocessorConfigName, cfg
		if nest {
			name, body = processorConfigName, append(append([]byte(`{"image_processor": `), cfg...), '}')
		}
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := LoadImageProcessor(dir)
		if err != nil {
			return
		}
		// keep each run small: skip configs that would upscale a 5×3
		// picture to megapixels
		if p.Height*p.Width > 1<<16 || p.MinPixels > 1<<16 {
			return
		}
		px, err := p.Image(img)
		if err != nil {
			if !errors.Is(err, ErrMedia) {
				t.Fatalf("image error %v", err)
			}
			return
		}
		n := 1
		for _, d := range px.Shape {
			n *= d
		}
		if n != len(px.Data) {
			t.Fatalf("shape %v for %d values", px.Shape, len(px.Data))
		}
		if v := p.VideoProcessor; v != nil && v.MinPixels <= 1<<16 {
			if _, err := p.Video([]Frame{{Image: img}, {Image: img}, {Image: img}}); err != nil && !errors.Is(err, ErrMedia) {
				t.Fatalf("video error %v", err)
			}
		}
	})
}
