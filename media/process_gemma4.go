package media

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// gemma4SoftTokens are the max_soft_tokens Gemma4ImageProcessor accepts.
var gemma4SoftTokens = []int{70, 140, 280, 560, 1120}

// gemma4Size is get_aspect_ratio_preserving_size: the largest size with
// the picture's aspect ratio whose sides are multiples of pooling·patch
// and that holds at most maxPatches patches.
func gemma4Size(h, w, patch, maxPatches, pool int) (int, int, error) {
	targetPx := float64(maxPatches * patch * patch)
	factor := math.Sqrt(targetPx / float64(h*w))
	side := pool * patch
	th := int(math.Floor(factor*float64(h)/float64(side))) * side
	tw := int(math.Floor(factor*float64(w)/float64(side))) * side
	maxSide := (maxPatches / (pool * pool)) * side
	switch {
	case th == 0 && tw == 0:
		return 0, 0, mediaErr("image: %d×%d resizes to nothing (sides must be multiples of %d)", w, h, side)
	case th == 0:
		th, tw = side, min(int(math.Floor(float64(w)/float64(h)))*side, maxSide)
	case tw == 0:
		tw, th = side, min(int(math.Floor(float64(h)/float64(w)))*side, maxSide)
	}
	if float64(th*tw) > targetPx {
		return 0, 0, mediaErr("image: %d×%d resizes to %d×%d, over %d patches of %d", w, h, tw, th, maxPatches, patch)
	}
	return th, tw, nil
}

// gemma4Image is Gemma4ImageProcessor: the aspect-preserving resize (none
// when the size already fits), rescale (and normalize, off by default),
// then one row per patch, patches row-major and each patch's values in
// (y, x, channel) order (convert_image_to_patches). The reference pads the
// rows to max_soft_tokens·pooling² with zero rows at position (-1, -1),
// which the tower masks out; Shape is the real rows only, [patches,
// patch·patch·3], and Grid (1, patches high, patches wide) gives each
// row's position.
func (p *ImageProcessor) gemma4Image(img Image, style coeffStyle, n norm) (Pixels, error) {
	patch := p.PatchSize
	oh, ow := img.Height, img.Width
	if p.DoResize {
		var err error
		if oh, ow, err = gemma4Size(img.Height, img.Width, patch, p.MaxSoftTokens*p.PoolingKernelSize*p.PoolingKernelSize, p.PoolingKernelSize); err != nil {
			return Pixels{}, err
		}
	} else if oh%patch != 0 || ow%patch != 0 {
		return Pixels{}, mediaErr("image: %d×%d is not a multiple of %d each way and the processor does not resize", ow, oh, patch)
	}
	px := resizeRGB(img.Pix, img.Width, img.Height, ow, oh, resampleFilter(p.Resample), style)
	gh, gw := oh/patch, ow/patch
	out := gemma4Patches(nil, n.planar(px, ow, oh, nil), oh, ow, patch)
	return Pixels{Data: out, Shape: []int{gh * gw, patch * patch * 3}, Grid: [3]int{1, gh, gw}}, nil
}

// gemma4Patches appends to dst one row per patch of planes ([3][h][w]):
// patches row-major, each patch's values in (y, x, channel) order
// (convert_image_to_patches, convert_video_to_patches).
func gemma4Patches(dst, planes []float32, h, w, patch int) []float32 {
	plane := h * w
	for by := 0; by < h/patch; by++ {
		for bx := 0; bx < w/patch; bx++ {
			for y := by * patch; y < (by+1)*patch; y++ {
				for x := bx * patch; x < (bx+1)*patch; x++ {
					i := y*w + x
					dst = append(dst, planes[i], planes[plane+i], planes[2*plane+i])
				}
			}
		}
	}
	return dst
}

// gemma4Video is Gemma4VideoProcessor._preprocess over a clip's sampled
// frames (checked by Video: all one size): every frame resized as
// Gemma4ImageProcessor resizes a picture, to the largest aspect-keeping
// size of at most max_soft_tokens·pooling² patches, rescaled and
// normalized (by default the fused (x − 0) / 255, where pictures take
// x · (1/255)), and cut into patch rows. The reference pads each frame's
// rows to the budget; Shape is the real rows, frame after frame,
// [frames·h·w, patch·patch·3], and Grid (frames, h, w) in patches: each
// frame is a picture to the tower.
func (p *ImageProcessor) gemma4Video(frames []Frame) (Pixels, error) {
	v := p.VideoProcessor
	patch := v.PatchSize
	h, w := frames[0].Height, frames[0].Width
	oh, ow := h, w
	if v.DoResize {
		var err error
		if oh, ow, err = gemma4Size(h, w, patch, v.MaxSoftTokens*v.PoolingKernelSize*v.PoolingKernelSize, v.PoolingKernelSize); err != nil {
			return Pixels{}, err
		}
	} else if oh%patch != 0 || ow%patch != 0 {
		return Pixels{}, mediaErr("video: %d×%d is not a multiple of %d each way and the processor does not resize", ow, oh, patch)
	}
	n := norm{v.DoRescale, v.DoNormalize, v.RescaleFactor, v.Mean, v.Std, false}
	gh, gw, dim := oh/patch, ow/patch, patch*patch*3
	out := make([]float32, 0, len(frames)*gh*gw*dim)
	var planes []float32
	for _, f := range frames {
		planes = n.planar(resizeRGB(f.Pix, w, h, ow, oh, resampleFilter(v.Resample), torchCoeffs), ow, oh, planes)
		out = gemma4Patches(out, planes, oh, ow, patch)
	}
	return Pixels{Data: out, Shape: []int{len(frames) * gh * gw, dim}, Grid: [3]int{len(frames), gh, gw}}, nil
}

// Gemma4Timestamp is a frame's time as Gemma4Processor writes it before
// the frame's soft tokens: f"{int(s // 60):02d}:{int(s % 60):02d}", with
// Python's float floor division and modulo.
func Gemma4Timestamp(s float64) string {
	if !(s >= 0) || math.IsInf(s, 0) {
		s = 0
	}
	mod := math.Mod(s, 60)
	div := (s - mod) / 60 // float_floor_div: the quotient of the exact remainder, floored
	fl := math.Floor(div)
	if div-fl > 0.5 {
		fl++
	}
	return fmt.Sprintf("%02d:%02d", int64(fl), int64(mod))
}

// gemma4Video reads Gemma4VideoProcessor's keys over its class defaults
// (transformers 5.17 video_processing_gemma4.py and BaseVideoProcessor):
// bicubic, rescale and an identity normalize, patch 16, 70 soft tokens a
// frame, pooling 3, 32 frames; num_frames null samples fps frames a
// second instead, and both null or do_sample_frames false keep every
// frame.
func (c *rawConfig) gemma4Video(v *VideoProcessor, raw []byte) error {
	v.Mean, v.Std = [3]float64{}, [3]float64{1, 1, 1}
	v.TemporalPatchSize, v.NumFrames, v.DoSampleFrames = 1, 32, true
	if err := c.common(&v.DoResize, &v.DoRescale, &v.DoNormalize, &v.Resample, &v.RescaleFactor, &v.Mean, &v.Std, "torchvision"); err != nil {
		return err
	}
	// the picture keys and their checks, with the video defaults
	ip := &ImageProcessor{PatchSize: 16, MaxSoftTokens: 70, PoolingKernelSize: 3}
	if err := c.gemma4(ip); err != nil {
		return err
	}
	v.PatchSize, v.MaxSoftTokens, v.PoolingKernelSize = ip.PatchSize, ip.MaxSoftTokens, ip.PoolingKernelSize
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return err
	}
	if _, ok := keys["num_frames"]; ok { // null is None: sample by fps
		v.NumFrames = 0
		if c.NumFrames != nil {
			v.NumFrames = *c.NumFrames
		}
	}
	if c.FPS != nil {
		v.FPS = *c.FPS
	}
	if c.DoSampleFrames != nil {
		v.DoSampleFrames = *c.DoSampleFrames
	}
	switch {
	case v.NumFrames < 0 || v.NumFrames > refMaxFrames:
		return fmt.Errorf("num_frames %d is out of range (1 to %d)", v.NumFrames, refMaxFrames)
	case c.FPS != nil && (!(v.FPS > 0) || math.IsInf(v.FPS, 0)):
		return fmt.Errorf("fps %v is not a positive number", v.FPS)
	case v.DoSampleFrames && v.NumFrames > 0 && v.FPS > 0:
		return errors.New("num_frames and fps are both set: the reference refuses to sample then")
	}
	return nil
}

// SampleOptions are the VideoFrames options that sample a clip as the
// video processor does; ok is false for a processor whose sampling is
// VideoFrames' default (Qwen3-VL's).
func (v *VideoProcessor) SampleOptions() (o VideoOptions, ok bool) {
	if v == nil || v.Type != "Gemma4VideoProcessor" {
		return VideoOptions{}, false
	}
	o.Sampling, o.NumFrames, o.FPS = SampleGemma4, v.NumFrames, v.FPS
	if !v.DoSampleFrames || v.NumFrames == 0 && v.FPS == 0 {
		o.NumFrames = maxStreamFrames // every frame (up to the frame limit)
	}
	return o, true
}

// gemma4 reads Gemma4ImageProcessor's keys.
func (c *rawConfig) gemma4(p *ImageProcessor) error {
	if c.PatchSize != nil {
		p.PatchSize = *c.PatchSize
	}
	if c.MaxSoftTokens != nil {
		p.MaxSoftTokens = *c.MaxSoftTokens
	}
	if c.PoolingKernelSize != nil {
		p.PoolingKernelSize = *c.PoolingKernelSize
	}
	ok := false
	for _, s := range gemma4SoftTokens {
		ok = ok || s == p.MaxSoftTokens
	}
	switch {
	case !ok:
		return fmt.Errorf("max_soft_tokens %d is not one of %v", p.MaxSoftTokens, gemma4SoftTokens)
	case p.PatchSize <= 0 || p.PatchSize > 64:
		return fmt.Errorf("patch_size %d is out of range", p.PatchSize)
	case p.PoolingKernelSize <= 0 || p.PoolingKernelSize > 16:
		return fmt.Errorf("pooling_kernel_size %d is out of range", p.PoolingKernelSize)
	}
	return nil
}
