package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"
)

// VideoOptions say how VideoFrames samples and bounds one clip. Zero
// fields take the defaults below.
type VideoOptions struct {
	FPS       float64       // frames sampled per second of video (2, as Qwen3-VL's processor)
	MaxFrames int           // frames kept after sampling (768 at most, the reference's cap), spread over the whole clip
	MaxPixels int           // width·height of one frame, checked from the header before decoding
	MaxBytes  int64         // encoded size
	Sampling  Sampling      // whose rule picks the frames
	NumFrames int           // SampleGemma4: the frames to take (num_frames); 0 takes FPS a second
	Timeout   time.Duration // time budget for probing and decoding
}

// Default video limits. A frame may be 4K UHD (a phone's video); the
// decoded frames then take at most MaxFrames·MaxPixels·3 bytes (1.6 GB at
// these defaults: a server that keeps less lowers MaxPixels or MaxFrames).
const (
	DefaultVideoFPS       = 2
	DefaultVideoMaxPixels = 3840 * 2160
	DefaultVideoTimeout   = 2 * time.Minute
)

// Sampling names a reference processor's rule for which frames of a clip
// a model sees.
type Sampling int

const (
	// SampleQwen3VL is Qwen3VLVideoProcessor.sample_frames (transformers
	// 5.17): int(frames/fps·target) frames, at least 4, evenly spaced
	// over the clip with numpy's linspace and round.
	SampleQwen3VL Sampling = iota
	// SampleQwen2VL is Qwen2VLVideoProcessor.sample_frames: a multiple of
	// temporal_patch_size (2) frames, at torch.arange steps, truncated.
	SampleQwen2VL
	// SampleGemma4 is BaseVideoProcessor.sample_frames, which
	// Gemma4VideoProcessor keeps: NumFrames frames (num_frames, else
	// int(frames/fps·FPS)) at torch.arange(0, frames, frames/n) steps,
	// truncated. Where the reference refuses a clip of fewer frames than
	// num_frames, every frame is taken.
	SampleGemma4
)

// The reference processors' own bounds (Qwen2VLVideoProcessor and
// Qwen3VLVideoProcessor: min_frames, max_frames, temporal_patch_size).
const (
	refMinFrames         = 4
	refMaxFrames         = 768
	refTemporalPatchSize = 2
)

// ErrNoVideoDecoder marks a server that cannot decode video at all (no
// ffmpeg on the PATH): the server's fault, not the input's, so it is not
// an ErrMedia.
var ErrNoVideoDecoder = errors.New("video decoder unavailable")

// errNoVideo is the input's fault: audio only, or nothing a demuxer
// knows as video.
var errNoVideo = fmt.Errorf("%w: video: no video stream in the file", ErrMedia)

func (o VideoOptions) withDefaults() VideoOptions {
	if o.FPS == 0 {
		o.FPS = DefaultVideoFPS
	}
	if o.MaxFrames <= 0 {
		o.MaxFrames = DefaultMaxFrames
	}
	if o.MaxPixels <= 0 {
		o.MaxPixels = DefaultVideoMaxPixels
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultVideoTimeout
	}
	return o
}

// VideoFrames decodes a video clip (whatever the platform's decoder
// reads: ffmpeg on Linux, AVFoundation on macOS) and returns the frames
// the reference processor would sample from it, in order, each with the
// time it is shown (frame index / the stream's average frame rate, as
// transformers' VideoMetadata.timestamps). Frame i is the i-th frame in
// presentation order, as torchcodec (transformers' default video
// decoder) and PyAV number them. Rotation metadata is applied,
// as EXIF orientation is for images.
//
// Errors that are the input's fault (not a video, no video stream,
// truncated, too large, too slow to decode) wrap ErrMedia; a missing
// decoder wraps ErrNoVideoDecoder; a cancelled ctx returns ctx.Err()
// wrapped.
func VideoFrames(ctx context.Context, data []byte, opt VideoOptions) ([]Frame, error) {
	opt = opt.withDefaults()
	if math.IsNaN(opt.FPS) || math.IsInf(opt.FPS, 0) || opt.FPS <= 0 {
		return nil, fmt.Errorf("video: sampling rate %v frames per second is not positive", opt.FPS)
	}
	if opt.Sampling != SampleQwen3VL && opt.Sampling != SampleQwen2VL && opt.Sampling != SampleGemma4 {
		return nil, fmt.Errorf("video: unknown sampling rule %d", opt.Sampling)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: video: the file is empty", ErrMedia)
	}
	if int64(len(data)) > opt.MaxBytes {
		return nil, fmt.Errorf("%w: video: the file is %d bytes, over the %d-byte limit", ErrMedia, len(data), opt.MaxBytes)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("video: %w", err)
	}

	// A file, not a pipe: an mp4 whose index (moov) follows its data
	// needs seeking, and AVFoundation opens URLs only.
	f, err := os.CreateTemp("", "hearth-video-*"+videoExt(data))
	if err != nil {
		return nil, fmt.Errorf("video: temporary file: %w", err)
	}
	path := f.Name()
	defer os.Remove(path)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, fmt.Errorf("video: temporary file: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("video: temporary file: %w", err)
	}

	budget, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	frames, err := decodeVideo(budget, path, opt)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("video: %w", ctx.Err())
		case budget.Err() != nil:
			return nil, fmt.Errorf("%w: video: decoding took longer than the %v budget (%w)", ErrMedia, opt.Timeout, budget.Err())
		}
		return nil, err
	}
	return frames, nil
}

// Bounds on what a header may claim: a frame rate, and a frame count (a
// day at 240 frames a second).
const (
	maxFPS          = 1e6
	maxStreamFrames = 240 * 86400
)

// videoInfo is what a decoder's probe tells of the first video stream.
type videoInfo struct {
	Width, Height int     // as shown: after rotation
	Frames        int     // frames in the stream: counted by a scan where the decoder can, else the header's
	FPS           float64 // average frame rate
}

// planVideo checks the header against the limits and picks the frames to
// decode.
func planVideo(info videoInfo, opt VideoOptions) ([]int, error) {
	if info.Width <= 0 || info.Height <= 0 {
		return nil, fmt.Errorf("%w: video: the stream has no frame size", ErrMedia)
	}
	if px := int64(info.Width) * int64(info.Height); px > int64(opt.MaxPixels) {
		return nil, fmt.Errorf("%w: video: frames are %d×%d (%d pixels), over the %d-pixel limit", ErrMedia, info.Width, info.Height, px, opt.MaxPixels)
	}
	if info.Frames <= 0 {
		return nil, fmt.Errorf("%w: video: the stream has no frames", ErrMedia)
	}
	if !(info.FPS > 0) || math.IsInf(info.FPS, 0) {
		return nil, fmt.Errorf("%w: video: the stream has no frame rate", ErrMedia)
	}
	var idx []int
	if opt.Sampling == SampleGemma4 {
		idx = sampleGemma4(info.Frames, info.FPS, opt.FPS, opt.NumFrames, opt.MaxFrames)
	} else {
		idx = sampleIndices(opt.Sampling, info.Frames, info.FPS, opt.FPS, opt.MaxFrames)
	}
	if len(idx) == 0 {
		return nil, fmt.Errorf("%w: video: %d frames are too few to sample", ErrMedia, info.Frames)
	}
	return idx, nil
}

// frameAt is frame i's time: i / fps, as VideoMetadata.timestamps.
func frameAt(i int, fps float64) time.Duration {
	return time.Duration(math.Round(float64(i) / fps * float64(time.Second)))
}

// sampleIndices is the frame indices rule r picks from a stream of total
// frames at videoFPS, sampling fps frames a second, keeping at most
// maxFrames (the reference's max_frames, itself 768 at most). Indices
// strictly ascend within [0, total): both rules cap the count at total,
// so their step is at least one frame.
func sampleIndices(r Sampling, total int, videoFPS, fps float64, maxFrames int) []int {
	maxFrames = min(maxFrames, refMaxFrames)
	if r == SampleQwen2VL {
		return sampleQwen2VL(total, videoFPS, fps, maxFrames)
	}
	return sampleQwen3VL(total, videoFPS, fps, maxFrames)
}

// sampleQwen3VL is transformers 5.17 Qwen3VLVideoProcessor.sample_frames
// (models/qwen3_vl/video_processing_qwen3_vl.py) with fps given:
//
//	num_frames = int(total_num_frames / metadata.fps * fps)
//	num_frames = min(max(num_frames, self.min_frames), self.max_frames, total_num_frames)
//	indices = np.linspace(0, total_num_frames - 1, num_frames).round().astype(int)
//
// numpy's linspace is i·((stop−start)/(num−1)) + start with the last set
// to stop exactly; round is half to even.
func sampleQwen3VL(total int, videoFPS, fps float64, maxFrames int) []int {
	n := total // int(want) when want < total; the cap below is total anyway, and int(want) could overflow
	if want := float64(total) / videoFPS * fps; want < float64(total) {
		n = int(want)
	}
	n = min(max(n, refMinFrames), maxFrames, total)
	if n <= 0 {
		return nil
	}
	idx := make([]int, n)
	if n == 1 {
		return idx // linspace(0, stop, 1) is [0]
	}
	step := float64(total-1) / float64(n-1)
	for i := range idx {
		idx[i] = int(math.RoundToEven(float64(i) * step))
	}
	idx[n-1] = total - 1
	return idx
}

// sampleQwen2VL is transformers 5.17 Qwen2VLVideoProcessor.sample_frames
// (models/qwen2_vl/video_processing_qwen2_vl.py) with fps given:
//
//	max_frames = math.floor(min(max_frames, total_num_frames) / temporal_patch_size) * temporal_patch_size
//	num_frames = total_num_frames / metadata.fps * fps
//	num_frames = min(max(num_frames, min_frames), max_frames, total_num_frames)
//	num_frames = math.floor(num_frames / temporal_patch_size) * temporal_patch_size
//	indices = torch.arange(0, total_num_frames, total_num_frames / num_frames).int()
//
// torch.arange of a float step makes float32 values start + step·i,
// computed in double (the CPU kernel's accumulate type) and rounded to
// float32, and ceil(total/step) of them; .int() truncates. That count
// is one more than num_frames when total/(total/num) rounds above num
// (17 frames, 14 wanted: 15 values, the last 17.0): the extra index is
// past the clip, and PyAV's decode loop, matching indices against the
// frames it decodes, never finds it (torchcodec, the default decoder,
// raises IndexError); it is dropped here. (On long
// ranges torch's SIMD lanes round a lane base to float32 first, which
// could move a value that lies within a float32 ulp of an integer;
// TestSampleQwen2VLLanes finds no such case for clips up to 2,000
// frames.) A clip too short for one temporal patch (the reference
// divides by zero) gives no indices.
func sampleQwen2VL(total int, videoFPS, fps float64, maxFrames int) []int {
	const tps = refTemporalPatchSize
	maxF := float64(min(maxFrames, total) / tps * tps)
	num := float64(total) / videoFPS * fps
	num = min(max(num, refMinFrames), maxF, float64(total))
	n := int(math.Floor(num/tps)) * tps
	if n <= 0 {
		return nil
	}
	return arangeIndices(total, n)
}

// arangeIndices is torch.arange(0, total, total / n).int() for n ≥ 1
// (sampleQwen2VL tells how torch computes it), less any index past the
// clip.
func arangeIndices(total, n int) []int {
	step := float64(total) / float64(n)
	count := int(math.Ceil(float64(total) / step))
	idx := make([]int, 0, count)
	for i := range count {
		if v := int(float32(step * float64(i))); v < total {
			idx = append(idx, v)
		}
	}
	return idx
}

// sampleGemma4 is BaseVideoProcessor.sample_frames (transformers 5.17
// video_processing_utils.py), Gemma4VideoProcessor's:
//
//	if num_frames is None and fps is not None:
//	    num_frames = int(total_num_frames / metadata.fps * fps)
//	if num_frames > total_num_frames: raise ValueError
//	indices = torch.arange(0, total_num_frames, total_num_frames / num_frames).int()
//
// with numFrames the config's num_frames (0: None). A clip shorter than
// num_frames, which the reference refuses, gives every frame, as does a
// clip whose fps rule asks for none; maxFrames (the server's limit) caps
// the count.
func sampleGemma4(total int, videoFPS, fps float64, numFrames, maxFrames int) []int {
	n := numFrames
	if n <= 0 {
		n = total
		if want := float64(total) / videoFPS * fps; want < float64(total) {
			n = int(want)
		}
	}
	n = min(n, total, maxFrames)
	if n <= 0 {
		n = min(total, maxFrames)
	}
	if n <= 0 {
		return nil
	}
	return arangeIndices(total, n)
}

// videoExt names the container so that a decoder that goes by the file
// name (AVFoundation) knows it; ffmpeg probes the bytes either way.
func videoExt(data []byte) string {
	switch {
	case len(data) >= 12 && bytes.Equal(data[4:8], []byte("ftyp")):
		switch string(data[8:12]) {
		case "qt  ":
			return ".mov"
		case "3gp4", "3gp5", "3gp6", "3g2a":
			return ".3gp"
		}
		return ".mp4"
	case len(data) >= 4 && bytes.Equal(data[:4], []byte{0x1a, 0x45, 0xdf, 0xa3}):
		if bytes.Contains(data[:min(len(data), 64)], []byte("webm")) {
			return ".webm"
		}
		return ".mkv"
	case len(data) >= 12 && bytes.Equal(data[:4], []byte("RIFF")) && bytes.Equal(data[8:12], []byte("AVI ")):
		return ".avi"
	}
	return ""
}

// VideoTimestamps is the time, in seconds, that Qwen3-VL's processor
// writes into the prompt for each temporal patch of frames (transformers
// 5.17 Qwen3VLProcessor._calculate_timestamps): the frames' Index/FPS,
// the last repeated until the count is a multiple of temporal, then the
// mean of each patch's first and last.
func VideoTimestamps(frames []Frame, temporal int) []float64 {
	if len(frames) == 0 || temporal <= 0 {
		return nil
	}
	ts := make([]float64, 0, len(frames)+temporal)
	for _, f := range frames {
		ts = append(ts, float64(f.Index)/f.FPS)
	}
	for len(ts)%temporal != 0 {
		ts = append(ts, ts[len(ts)-1])
	}
	out := make([]float64, 0, len(ts)/temporal)
	for i := 0; i < len(ts); i += temporal {
		out = append(out, (ts[i]+ts[i+temporal-1])/2)
	}
	return out
}
