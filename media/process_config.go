package media

import (
	"encoding/json"
	"errors"
	"fmt"
	"hearth/internal/readfile"
	"io/fs"
	"path/filepath"
	"strings"
)

// The files a checkpoint's processor settings live in. transformers 5.17
// reads, for the image processor, processor_config.json's "image_processor"
// object when there is one (what its save_pretrained writes for a whole
// processor: one processor_config.json with "image_processor" and
// "video_processor" objects nested, no preprocessor_config.json) and else
// preprocessor_config.json (older checkpoints, and an image processor saved
// on its own); for the video processor, processor_config.json's
// "video_processor", then video_preprocessor_config.json, then
// preprocessor_config.json.
const (
	processorConfigName    = "processor_config.json"
	preprocessorConfigName = "preprocessor_config.json"
	videoConfigName        = "video_preprocessor_config.json"
	maxConfigBytes         = 1 << 20
)

// ImageProcessor is a checkpoint's vision preprocessing, as its
// processor config describes it. The fields are what the config says
// (class defaults filled in); they are read-only.
type ImageProcessor struct {
	// Type is the reference class: Gemma3ImageProcessor,
	// SiglipImageProcessor, Qwen2VLImageProcessor or Gemma4ImageProcessor.
	Type string
	// Backend is "torchvision" (transformers 5.17's default, the one a
	// user gets) or "pil" (a config naming a …Pil class).
	Backend string

	DoResize, DoRescale, DoNormalize bool
	Resample                         int // PIL code: 2 bilinear, 3 bicubic
	RescaleFactor                    float64
	Mean, Std                        [3]float64

	// Fixed-size towers (Gemma 3, SigLIP): the output size.
	Height, Width int

	// Qwen-VL: smart_resize's pixel bounds (size.shortest_edge and
	// size.longest_edge, or min_pixels/max_pixels) and the patching.
	MinPixels, MaxPixels                    int
	PatchSize, TemporalPatchSize, MergeSize int

	// Gemma 4: the soft-token budget (max_soft_tokens) and the tower's
	// pooling, which fix the resize (PatchSize is its patch).
	MaxSoftTokens, PoolingKernelSize int

	// VideoProcessor is the Qwen-VL video processor's settings, nil for a
	// processor without one.
	VideoProcessor *VideoProcessor
}

// VideoProcessor is a Qwen-VL video processor's settings.
type VideoProcessor struct {
	// Type is Qwen2VLVideoProcessor or Qwen3VLVideoProcessor (whose
	// smart_resize counts the frames into the pixel budget).
	Type                                    string
	DoResize, DoRescale, DoNormalize        bool
	Resample                                int
	RescaleFactor                           float64
	Mean, Std                               [3]float64
	MinPixels, MaxPixels                    int
	PatchSize, TemporalPatchSize, MergeSize int
	// CapPixelsPerFrame is cap_pixels_per_frame (off unless the config
	// sets it, as in transformers 5.17) and MaxVideoTokens its budget.
	CapPixelsPerFrame bool
	MaxVideoTokens    int

	// Gemma 4 (Gemma4VideoProcessor, process_gemma4.go): each frame is a
	// picture under its own soft-token budget (max_soft_tokens, pooling
	// PoolingKernelSize); the frames sampled are NumFrames (num_frames),
	// or FPS a second where num_frames is null, or every frame where
	// do_sample_frames is false.
	MaxSoftTokens, PoolingKernelSize, NumFrames int
	FPS                                         float64
	DoSampleFrames                              bool
}

var (
	clipMean = [3]float64{0.48145466, 0.4578275, 0.40821073}
	clipStd  = [3]float64{0.26862954, 0.26130258, 0.27577711}
	halfMean = [3]float64{0.5, 0.5, 0.5}
)

// rawConfig is the union of the keys we read; pointers tell a missing or
// null key from a zero one.
type rawConfig struct {
	ImageProcessorType *string         `json:"image_processor_type"`
	VideoProcessorType *string         `json:"video_processor_type"`
	ProcessorClass     *string         `json:"processor_class"`
	DoResize           *bool           `json:"do_resize"`
	DoRescale          *bool           `json:"do_rescale"`
	DoNormalize        *bool           `json:"do_normalize"`
	DoPanAndScan       *bool           `json:"do_pan_and_scan"`
	DoCenterCrop       *bool           `json:"do_center_crop"`
	Resample           *int            `json:"resample"`
	RescaleFactor      *float64        `json:"rescale_factor"`
	ImageMean          json.RawMessage `json:"image_mean"`
	ImageStd           json.RawMessage `json:"image_std"`
	Size               *struct {
		Height       *int `json:"height"`
		Width        *int `json:"width"`
		ShortestEdge *int `json:"shortest_edge"`
		LongestEdge  *int `json:"longest_edge"`
		MinPixels    *int `json:"min_pixels"`
		MaxPixels    *int `json:"max_pixels"`
		MaxHeight    *int `json:"max_height"`
		MaxWidth     *int `json:"max_width"`
	} `json:"size"`
	MinPixels         *int  `json:"min_pixels"`
	MaxPixels         *int  `json:"max_pixels"`
	PatchSize         *int  `json:"patch_size"`
	TemporalPatchSize *int  `json:"temporal_patch_size"`
	MergeSize         *int  `json:"merge_size"`
	CapPixelsPerFrame *bool `json:"cap_pixels_per_frame"`
	MaxVideoTokens    *int  `json:"max_video_tokens"`
	MaxSoftTokens     *int  `json:"max_soft_tokens"`
	PoolingKernelSize *int  `json:"pooling_kernel_size"`
	// video sampling (Gemma4VideoProcessor); null and absent alike
	NumFrames      *int     `json:"num_frames"`
	FPS            *float64 `json:"fps"`
	DoSampleFrames *bool    `json:"do_sample_frames"`
}

// LoadImageProcessor reads the image (and, for Qwen-VL, video) processor
// settings of the checkpoint in dir. It refuses processors it does not
// reproduce exactly, naming them.
func LoadImageProcessor(dir string) (*ImageProcessor, error) {
	nested, err := readJSONObject(filepath.Join(dir, processorConfigName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var imgRaw json.RawMessage
	var imgFrom string
	if v, ok := nested["image_processor"]; ok && string(v) != "null" {
		imgRaw, imgFrom = v, processorConfigName+` "image_processor"`
	} else {
		path := filepath.Join(dir, preprocessorConfigName)
		imgRaw, err = readLimited(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("media: %s has neither %s nor an \"image_processor\" in %s", dir, preprocessorConfigName, processorConfigName)
		}
		if err != nil {
			return nil, err
		}
		imgFrom = preprocessorConfigName
	}
	p, err := parseImageProcessor(imgRaw)
	if err != nil {
		return nil, fmt.Errorf("media: %s: %w", imgFrom, err)
	}
	if p.Type != "Qwen2VLImageProcessor" && p.Type != "Gemma4ImageProcessor" {
		return p, nil
	}

	// The video processor: nested, its own file, else the image file.
	var vidRaw json.RawMessage
	vidFrom := ""
	if v, ok := nested["video_processor"]; ok && string(v) != "null" {
		vidRaw, vidFrom = v, processorConfigName+` "video_processor"`
	} else if b, err := readLimited(filepath.Join(dir, videoConfigName)); err == nil {
		vidRaw, vidFrom = b, videoConfigName
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	} else if b, err := readLimited(filepath.Join(dir, preprocessorConfigName)); err == nil {
		vidRaw, vidFrom = b, preprocessorConfigName
	} else {
		vidRaw, vidFrom = imgRaw, imgFrom
	}
	v, err := parseVideoProcessor(vidRaw, p)
	if err != nil {
		return nil, fmt.Errorf("media: %s: %w", vidFrom, err)
	}
	p.VideoProcessor = v
	return p, nil
}

func readLimited(path string) ([]byte, error) {
	b, err := readfile.Bounded(path, maxConfigBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("media: %w", err)
	}
	return b, err
}

func readJSONObject(path string) (map[string]json.RawMessage, error) {
	b, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("media: %s: %v", path, err)
	}
	return m, nil
}

// canonicalType maps a class name (with or without its "Fast" alias or
// "Pil" backend suffix) to the reference class and backend.
func canonicalType(name string) (typ, backend string) {
	backend = "torchvision"
	switch {
	case strings.HasSuffix(name, "Pil"):
		name, backend = strings.TrimSuffix(name, "Pil"), "pil"
	case strings.HasSuffix(name, "Fast"):
		name = strings.TrimSuffix(name, "Fast")
	}
	return name, backend
}

// processorClassImage maps a processor_class to its image processor, for
// configs that name only the former.
var processorClassImage = map[string]string{
	"Gemma3Processor":     "Gemma3ImageProcessor",
	"PaliGemmaProcessor":  "SiglipImageProcessor",
	"SiglipProcessor":     "SiglipImageProcessor",
	"Qwen2VLProcessor":    "Qwen2VLImageProcessor",
	"Qwen2_5_VLProcessor": "Qwen2VLImageProcessor",
	"Qwen3VLProcessor":    "Qwen2VLImageProcessor",
	"Gemma4Processor":     "Gemma4ImageProcessor",
}

func parseImageProcessor(raw []byte) (*ImageProcessor, error) {
	var c rawConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	name := ""
	switch {
	case c.ImageProcessorType != nil:
		name = *c.ImageProcessorType
	case c.ProcessorClass != nil && processorClassImage[*c.ProcessorClass] != "":
		name = processorClassImage[*c.ProcessorClass]
	default:
		return nil, errors.New("no image_processor_type")
	}
	typ, backend := canonicalType(name)
	p := &ImageProcessor{Type: typ, Backend: backend, DoResize: true, DoRescale: true, DoNormalize: true, RescaleFactor: 1.0 / 255}
	switch typ {
	case "Gemma3ImageProcessor":
		p.Resample, p.Mean, p.Std, p.Height, p.Width = int(filterBilinear), halfMean, halfMean, 224, 224
		if c.DoPanAndScan != nil && *c.DoPanAndScan {
			return nil, errors.New("Gemma 3 pan-and-scan (do_pan_and_scan) is not supported yet")
		}
	case "SiglipImageProcessor":
		p.Resample, p.Mean, p.Std, p.Height, p.Width = int(filterBicubic), halfMean, halfMean, 224, 224
	case "Qwen2VLImageProcessor":
		p.Resample, p.Mean, p.Std = int(filterBicubic), clipMean, clipStd
		p.MinPixels, p.MaxPixels = 56*56, 28*28*1280
		p.PatchSize, p.TemporalPatchSize, p.MergeSize = 14, 2, 2
	case "Gemma4ImageProcessor":
		// no normalization: the tower maps [0, 1] to [-1, 1] itself
		p.Resample, p.DoNormalize, p.Std = int(filterBicubic), false, [3]float64{1, 1, 1}
		p.PatchSize, p.MaxSoftTokens, p.PoolingKernelSize = 16, 280, 3
	default:
		return nil, fmt.Errorf("image processor %q is not supported (supported: Gemma3ImageProcessor, SiglipImageProcessor, Qwen2VLImageProcessor, Gemma4ImageProcessor, their Fast and Pil variants)", name)
	}
	if c.DoCenterCrop != nil && *c.DoCenterCrop {
		return nil, errors.New("do_center_crop is not supported")
	}
	if err := c.common(&p.DoResize, &p.DoRescale, &p.DoNormalize, &p.Resample, &p.RescaleFactor, &p.Mean, &p.Std, backend); err != nil {
		return nil, err
	}
	if typ == "Qwen2VLImageProcessor" {
		if err := c.qwen(&p.MinPixels, &p.MaxPixels, &p.PatchSize, &p.TemporalPatchSize, &p.MergeSize); err != nil {
			return nil, err
		}
		return p, nil
	}
	if typ == "Gemma4ImageProcessor" {
		if err := c.gemma4(p); err != nil {
			return nil, err
		}
		return p, nil
	}
	if s := c.Size; s != nil {
		if s.Height == nil || s.Width == nil {
			return nil, errors.New(`size must be {"height", "width"} for a fixed-size processor`)
		}
		p.Height, p.Width = *s.Height, *s.Width
	}
	if p.Height <= 0 || p.Width <= 0 || p.Height > 4096 || p.Width > 4096 {
		return nil, fmt.Errorf("size %d×%d is out of range", p.Width, p.Height)
	}
	return p, nil
}

// common reads the keys every processor has and checks them.
func (c *rawConfig) common(doResize, doRescale, doNormalize *bool, resample *int, rescale *float64, mean, std *[3]float64, backend string) error {
	for _, kv := range []struct {
		dst *bool
		src *bool
	}{{doResize, c.DoResize}, {doRescale, c.DoRescale}, {doNormalize, c.DoNormalize}} {
		if kv.src != nil {
			*kv.dst = *kv.src
		}
	}
	if c.Resample != nil {
		*resample = *c.Resample
	}
	switch *resample {
	case int(filterBilinear), int(filterBicubic):
	case 1: // LANCZOS: the torchvision backend warns and uses BICUBIC
		if backend == "pil" {
			return errors.New("resample 1 (Lanczos) is not supported")
		}
		*resample = int(filterBicubic)
	default:
		names := map[int]string{0: "nearest", 4: "box", 5: "hamming"}
		return fmt.Errorf("resample %d (%s) is not supported; bilinear (2) and bicubic (3) are", *resample, names[*resample])
	}
	if c.RescaleFactor != nil {
		*rescale = *c.RescaleFactor
		if !(*rescale > 0) || *rescale > 1 {
			return fmt.Errorf("rescale_factor %v is out of range", *rescale)
		}
	}
	for _, kv := range []struct {
		dst  *[3]float64
		src  json.RawMessage
		name string
	}{{mean, c.ImageMean, "image_mean"}, {std, c.ImageStd, "image_std"}} {
		if len(kv.src) == 0 || string(kv.src) == "null" {
			continue
		}
		var one float64
		var three []float64
		if json.Unmarshal(kv.src, &one) == nil {
			*kv.dst = [3]float64{one, one, one}
		} else if err := json.Unmarshal(kv.src, &three); err != nil || len(three) != 3 {
			return fmt.Errorf("%s must be a number or three numbers", kv.name)
		} else {
			copy(kv.dst[:], three)
		}
	}
	for _, s := range std {
		if s == 0 {
			return errors.New("image_std has a zero")
		}
	}
	return nil
}

// qwen reads the Qwen-VL size keys: size first, then min_pixels and
// max_pixels, which override it (Qwen2VLImageProcessor.__init__).
func (c *rawConfig) qwen(minPx, maxPx, patch, temporal, merge *int) error {
	if s := c.Size; s != nil {
		if s.ShortestEdge != nil {
			*minPx = *s.ShortestEdge
		} else if s.MinPixels != nil {
			*minPx = *s.MinPixels
		}
		if s.LongestEdge != nil {
			*maxPx = *s.LongestEdge
		} else if s.MaxPixels != nil {
			*maxPx = *s.MaxPixels
		}
	}
	if c.MinPixels != nil {
		*minPx = *c.MinPixels
	}
	if c.MaxPixels != nil {
		*maxPx = *c.MaxPixels
	}
	if c.PatchSize != nil {
		*patch = *c.PatchSize
	}
	if c.TemporalPatchSize != nil {
		*temporal = *c.TemporalPatchSize
	}
	if c.MergeSize != nil {
		*merge = *c.MergeSize
	}
	switch {
	case *minPx <= 0 || *maxPx <= 0 || *minPx > *maxPx:
		return fmt.Errorf("pixel bounds %d..%d are out of range", *minPx, *maxPx)
	case *maxPx > 1<<28:
		return fmt.Errorf("max pixels %d is out of range", *maxPx)
	case *patch <= 0 || *patch > 64 || *merge <= 0 || *merge > 8 || *temporal <= 0 || *temporal > 8:
		return fmt.Errorf("patch_size %d, merge_size %d, temporal_patch_size %d: out of range", *patch, *merge, *temporal)
	}
	return nil
}

func parseVideoProcessor(raw []byte, img *ImageProcessor) (*VideoProcessor, error) {
	var c rawConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	typ := ""
	switch {
	case c.VideoProcessorType != nil:
		typ = strings.TrimSuffix(*c.VideoProcessorType, "Fast")
	case c.ProcessorClass != nil && *c.ProcessorClass == "Qwen3VLProcessor":
		typ = "Qwen3VLVideoProcessor"
	case img.Type == "Gemma4ImageProcessor":
		typ = "Gemma4VideoProcessor"
	default:
		typ = "Qwen2VLVideoProcessor"
	}
	v := &VideoProcessor{Type: typ, DoResize: true, DoRescale: true, DoNormalize: true, RescaleFactor: 1.0 / 255, Resample: int(filterBicubic)}
	switch typ {
	case "Qwen2VLVideoProcessor":
		v.Mean, v.Std = clipMean, clipStd
		v.MinPixels, v.MaxPixels = 128*28*28, 28*28*768
		v.PatchSize, v.TemporalPatchSize, v.MergeSize = 14, 2, 2
		v.MaxVideoTokens = 128000
	case "Qwen3VLVideoProcessor":
		v.Mean, v.Std = halfMean, halfMean
		v.MinPixels, v.MaxPixels = 128*32*32, 32*32*768
		v.PatchSize, v.TemporalPatchSize, v.MergeSize = 16, 2, 2
		v.MaxVideoTokens = 768
	case "Gemma4VideoProcessor":
		if err := c.gemma4Video(v, raw); err != nil {
			return nil, err
		}
		return v, nil
	default:
		return nil, fmt.Errorf("video processor %q is not supported (supported: Qwen2VLVideoProcessor, Qwen3VLVideoProcessor, Gemma4VideoProcessor)", typ)
	}
	if err := c.common(&v.DoResize, &v.DoRescale, &v.DoNormalize, &v.Resample, &v.RescaleFactor, &v.Mean, &v.Std, img.Backend); err != nil {
		return nil, err
	}
	if err := c.qwen(&v.MinPixels, &v.MaxPixels, &v.PatchSize, &v.TemporalPatchSize, &v.MergeSize); err != nil {
		return nil, err
	}
	if c.CapPixelsPerFrame != nil {
		v.CapPixelsPerFrame = *c.CapPixelsPerFrame
	}
	if c.MaxVideoTokens != nil {
		v.MaxVideoTokens = *c.MaxVideoTokens
	}
	return v, nil
}
