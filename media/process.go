package media

import (
	"errors"
	"fmt"
	"math"
)

// Image preprocesses one picture as the reference processor does with
// its default settings, giving the pixel_values of that one image:
//
//   - Gemma 3 and SigLIP: resize to the config's fixed size, rescale,
//     normalize; Shape [3, H, W] (the reference's [1, 3, H, W] without the
//     batch axis).
//   - Qwen2-VL, Qwen2.5-VL, Qwen3-VL: smart_resize to multiples of
//     patch·merge within the pixel bounds, resize, rescale, normalize, then
//     the reference's patch layout, the frame repeated temporal_patch_size
//     times: Shape [grid_h·grid_w, 3·temporal·patch·patch], Grid (1, h, w).
//   - Gemma 4: the aspect-preserving resize to the soft-token budget,
//     rescale, then one row per patch (process_gemma4.go): Shape
//     [patches, patch·patch·3], Grid (1, h, w).
//
// The reference is transformers 5.17's torchvision backend, the one
// AutoImageProcessor gives by default (the "Fast" class names are aliases
// of it there), or its PIL backend where the config names a …Pil class.
func (p *ImageProcessor) Image(img Image) (Pixels, error) {
	if err := checkImage(img); err != nil {
		return Pixels{}, err
	}
	style := torchCoeffs
	if p.Backend == "pil" {
		style = pilCoeffs
	}
	n := norm{p.DoRescale, p.DoNormalize, p.RescaleFactor, p.Mean, p.Std, p.Backend == "pil"}
	if p.Type == "Gemma4ImageProcessor" {
		return p.gemma4Image(img, style, n)
	}
	if p.Type != "Qwen2VLImageProcessor" {
		oh, ow := img.Height, img.Width
		if p.DoResize {
			oh, ow = p.Height, p.Width
		}
		px := resizeRGB(img.Pix, img.Width, img.Height, ow, oh, resampleFilter(p.Resample), style)
		return Pixels{Data: n.planar(px, ow, oh, nil), Shape: []int{3, oh, ow}}, nil
	}

	factor := p.PatchSize * p.MergeSize
	oh, ow := img.Height, img.Width
	if p.DoResize {
		var err error
		if oh, ow, err = smartResize(img.Height, img.Width, factor, p.MinPixels, p.MaxPixels); err != nil {
			return Pixels{}, err
		}
	} else if oh%factor != 0 || ow%factor != 0 {
		return Pixels{}, mediaErr("image: %d×%d is not a multiple of %d each way and the processor does not resize", ow, oh, factor)
	}
	px := resizeRGB(img.Pix, img.Width, img.Height, ow, oh, resampleFilter(p.Resample), style)
	frame := n.planar(px, ow, oh, nil)
	frames := make([][]float32, p.TemporalPatchSize)
	for i := range frames {
		frames[i] = frame
	}
	return patchify(frames, oh, ow, p.PatchSize, p.MergeSize, p.TemporalPatchSize), nil
}

// Video preprocesses a clip's frames (already sampled, all one size) as
// the Qwen-VL video processor does with do_sample_frames=False: every
// frame resized to one smart_resize size (Qwen3-VL's counts the frames
// into its pixel budget), rescaled and normalized, the last frame
// repeated until the count is a multiple of temporal_patch_size (as
// patchify does), then the patch layout: Shape
// [grid_t·grid_h·grid_w, 3·temporal·patch·patch], Grid (t, h, w).
func (p *ImageProcessor) Video(frames []Frame) (Pixels, error) {
	v := p.VideoProcessor
	if v == nil {
		return Pixels{}, fmt.Errorf("media: %s takes no video", p.Type)
	}
	if len(frames) == 0 {
		return Pixels{}, mediaErr("video: no frames")
	}
	h, w := frames[0].Height, frames[0].Width
	for i, f := range frames {
		if err := checkImage(f.Image); err != nil {
			return Pixels{}, fmt.Errorf("frame %d: %w", i, err)
		}
		if f.Height != h || f.Width != w {
			return Pixels{}, mediaErr("video: frame %d is %d×%d, frame 0 %d×%d", i, f.Width, f.Height, w, h)
		}
	}
	if v.Type == "Gemma4VideoProcessor" {
		return p.gemma4Video(frames)
	}
	factor := v.PatchSize * v.MergeSize
	nf := len(frames)
	oh, ow := h, w
	if v.DoResize {
		var err error
		maxPx := v.MaxPixels
		switch v.Type {
		case "Qwen3VLVideoProcessor":
			if v.CapPixelsPerFrame {
				perFrame := max(min(v.MaxVideoTokens*factor*factor, v.MaxPixels/nf), int(float64(v.MinPixels)*1.05))
				maxPx = perFrame * nf
			}
			oh, ow, err = smartResizeVideo(nf, h, w, v.TemporalPatchSize, factor, v.MinPixels, maxPx)
		default:
			if v.CapPixelsPerFrame {
				total := int(float64(v.MaxVideoTokens*factor*factor) * 0.9)
				maxPx = max(min(maxPx, total*v.TemporalPatchSize/nf), int(float64(v.MinPixels)*1.05))
			}
			oh, ow, err = smartResize(h, w, factor, v.MinPixels, maxPx)
		}
		if err != nil {
			return Pixels{}, err
		}
	} else if oh%factor != 0 || ow%factor != 0 {
		return Pixels{}, mediaErr("video: %d×%d is not a multiple of %d each way and the processor does not resize", ow, oh, factor)
	}
	n := norm{v.DoRescale, v.DoNormalize, v.RescaleFactor, v.Mean, v.Std, false}
	planes := make([][]float32, 0, nf+v.TemporalPatchSize)
	for _, f := range frames {
		px := resizeRGB(f.Pix, w, h, ow, oh, resampleFilter(v.Resample), torchCoeffs)
		planes = append(planes, n.planar(px, ow, oh, nil))
	}
	for len(planes)%v.TemporalPatchSize != 0 {
		planes = append(planes, planes[len(planes)-1])
	}
	return patchify(planes, oh, ow, v.PatchSize, v.MergeSize, v.TemporalPatchSize), nil
}

func checkImage(img Image) error {
	if img.Width <= 0 || img.Height <= 0 {
		return mediaErr("image: %d×%d has no pixels", img.Width, img.Height)
	}
	if int64(len(img.Pix)) != 3*int64(img.Width)*int64(img.Height) {
		return fmt.Errorf("media: a %d×%d image with %d bytes of pixels (want %d)", img.Width, img.Height, len(img.Pix), 3*img.Width*img.Height)
	}
	return nil
}

// norm is rescale and normalize as the backend computes them, in float32.
type norm struct {
	rescale, normalize bool
	factor             float64
	mean, std          [3]float64
	pil                bool
}

// planar turns interleaved RGB into normalized float32 planes [3][h][w].
//
// torchvision backend (rescale_and_normalize): with both steps on, the
// rescale is fused into the normalization, mean' = float32(mean)·
// float32(1/factor) and std' likewise, then (float32(x) − mean') / std';
// normalize alone is (x − mean) / std; rescale alone x·float32(factor).
// PIL backend (numpy): rescale is float32(float64(x)·factor), then
// (r − float32(mean)) / float32(std). Every product and quotient is
// rounded to float32 as the reference rounds it (explicit conversions
// keep Go from fusing a multiply-add).
func (n norm) planar(px []uint8, w, h int, dst []float32) []float32 {
	plane := w * h
	if dst == nil {
		dst = make([]float32, 3*plane)
	}
	var lut [3][256]float32
	for c := 0; c < 3; c++ {
		m32, s32 := float32(n.mean[c]), float32(n.std[c])
		for v := 0; v < 256; v++ {
			x := float32(v)
			switch {
			case n.pil:
				if n.rescale {
					x = float32(float64(v) * n.factor)
				}
				if n.normalize {
					x = float32(x-m32) / s32
				}
			case n.rescale && n.normalize:
				inv := float32(1 / n.factor)
				mf, sf := float32(m32*inv), float32(s32*inv)
				x = float32(x-mf) / sf
			case n.normalize:
				x = float32(x-m32) / s32
			case n.rescale:
				x = float32(x * float32(n.factor))
			}
			lut[c][v] = x
		}
	}
	for i := 0; i < plane; i++ {
		dst[i] = lut[0][px[3*i]]
		dst[plane+i] = lut[1][px[3*i+1]]
		dst[2*plane+i] = lut[2][px[3*i+2]]
	}
	return dst
}

// patchify lays frames (each [3][h][w]) out as the Qwen-VL processors
// do: the frames grouped by temporal_patch_size t, rows ordered
// (temporal group, block row, block column, row in block, column in
// block) for merge×merge blocks of patches, each row holding
// (channel, frame in group, y, x) of one patch×patch patch.
func patchify(frames [][]float32, h, w, patch, merge, t int) Pixels {
	gt := len(frames) / t
	gh, gw := h/patch, w/patch
	dim := 3 * t * patch * patch
	out := make([]float32, gt*gh*gw*dim)
	plane := h * w
	o := 0
	for it := 0; it < gt; it++ {
		for bh := 0; bh < gh/merge; bh++ {
			for bw := 0; bw < gw/merge; bw++ {
				for mh := 0; mh < merge; mh++ {
					for mw := 0; mw < merge; mw++ {
						y0 := (bh*merge + mh) * patch
						x0 := (bw*merge + mw) * patch
						for c := 0; c < 3; c++ {
							for ti := 0; ti < t; ti++ {
								f := frames[it*t+ti]
								for py := 0; py < patch; py++ {
									row := f[c*plane+(y0+py)*w+x0:]
									o += copy(out[o:o+patch], row[:patch])
								}
							}
						}
					}
				}
			}
		}
	}
	return Pixels{Data: out, Shape: []int{gt * gh * gw, dim}, Grid: [3]int{gt, gh, gw}}
}

// smartResize is Qwen2-VL's smart_resize: both sides multiples of factor,
// the area within [minPixels, maxPixels], the aspect ratio kept as well as
// that allows. Python's round() rounds half to even.
func smartResize(h, w, factor, minPixels, maxPixels int) (int, int, error) {
	if float64(max(h, w))/float64(min(h, w)) > 200 {
		return 0, 0, mediaErr("image: %d×%d has an aspect ratio over 200", w, h)
	}
	fh, fw, ff := float64(h), float64(w), float64(factor)
	hBar := int(math.RoundToEven(fh/ff)) * factor
	wBar := int(math.RoundToEven(fw/ff)) * factor
	if int64(hBar)*int64(wBar) > int64(maxPixels) {
		beta := math.Sqrt(fh * fw / float64(maxPixels))
		hBar = max(factor, int(math.Floor(fh/beta/ff))*factor)
		wBar = max(factor, int(math.Floor(fw/beta/ff))*factor)
	} else if int64(hBar)*int64(wBar) < int64(minPixels) {
		beta := math.Sqrt(float64(minPixels) / (fh * fw))
		hBar = int(math.Ceil(fh*beta/ff)) * factor
		wBar = int(math.Ceil(fw*beta/ff)) * factor
	}
	if hBar <= 0 || wBar <= 0 {
		return 0, 0, errors.New("media: smart_resize gave an empty size")
	}
	return hBar, wBar, nil
}

// smartResizeVideo is Qwen3-VL's video smart_resize: the frame count,
// rounded to the temporal factor, is part of the pixel budget, and sides
// under factor are first scaled up (for the arithmetic only).
func smartResizeVideo(frames, h, w, temporal, factor, minPixels, maxPixels int) (int, int, error) {
	if frames < temporal {
		return 0, 0, mediaErr("video: %d frame(s); this processor needs at least %d", frames, temporal)
	}
	fh, fw, ff := float64(h), float64(w), float64(factor)
	if h < factor || w < factor {
		scale := math.Max(ff/fh, ff/fw)
		fh, fw = float64(int(fh*scale)), float64(int(fw*scale))
	}
	if math.Max(fh, fw)/math.Min(fh, fw) > 200 {
		return 0, 0, mediaErr("video: %d×%d has an aspect ratio over 200", w, h)
	}
	hBar := int(math.RoundToEven(fh/ff)) * factor
	wBar := int(math.RoundToEven(fw/ff)) * factor
	tBar := int(math.RoundToEven(float64(frames)/float64(temporal))) * temporal
	nf := float64(frames)
	if int64(tBar)*int64(hBar)*int64(wBar) > int64(maxPixels) {
		beta := math.Sqrt(nf * fh * fw / float64(maxPixels))
		hBar = max(factor, int(math.Floor(fh/beta/ff))*factor)
		wBar = max(factor, int(math.Floor(fw/beta/ff))*factor)
	} else if int64(tBar)*int64(hBar)*int64(wBar) < int64(minPixels) {
		beta := math.Sqrt(float64(minPixels) / (nf * fh * fw))
		hBar = int(math.Ceil(fh*beta/ff)) * factor
		wBar = int(math.Ceil(fw*beta/ff)) * factor
	}
	if hBar <= 0 || wBar <= 0 {
		return 0, 0, errors.New("media: smart_resize gave an empty size")
	}
	return hBar, wBar, nil
}
