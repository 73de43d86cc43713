// Package media turns what a user sends (image files, video clips, audio)
// into arrays a model's tower takes: decode under limits, then the exact
// preprocessing of the checkpoint's Hugging Face processor. It holds no
// weights and knows no model graph.
package media

import (
	"errors"
	"time"
)

// Image is a decoded picture: 8-bit RGB, three bytes per pixel, rows top
// to bottom, with its EXIF orientation already applied. Processors take
// it as Hugging Face's do after convert("RGB").
type Image struct {
	Width, Height int
	Pix           []uint8 // len 3·Width·Height
}

// Limits bound one decode. Zero fields take the defaults below.
type Limits struct {
	MaxBytes  int64 // encoded size
	MaxPixels int   // width·height, checked from the header before any pixel is decoded
	MaxFrames int   // video frames kept after sampling
}

// Default limits: a 20 MB file, a 50-megapixel picture, 64 video frames.
const (
	DefaultMaxBytes  = 20 << 20
	DefaultMaxPixels = 50_000_000
	DefaultMaxFrames = 64
)

// Frame is one video frame and when it is shown.
type Frame struct {
	Image
	At time.Duration
	// Index is the frame's number in the stream and FPS the stream's
	// average frame rate (At is Index/FPS): the reference's
	// frames_indices and metadata.fps, from which Qwen3-VL's processor
	// writes the frames' times into the prompt.
	Index int
	FPS   float64
}

// Pixels is a processor's output for one image (or one video): the
// pixel_values the tower takes, laid out as the reference processor lays
// them out.
type Pixels struct {
	Data  []float32
	Shape []int // e.g. [3, H, W] for SigLIP; [patches, C·T·P·P] for Qwen-VL
	// Grid is Qwen-VL's grid_thw (temporal, height, width in patches),
	// and Gemma 4's patch grid (1, height, width); zero for fixed-size
	// towers.
	Grid [3]int
}

// ErrMedia marks every error that is the input's fault (corrupt, truncated,
// too large, unsupported format): the API answers it with a 400.
var ErrMedia = errors.New("media")
