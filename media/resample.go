package media

import "math"

// The resize of the vision processors, written here rather than taken
// from an image library because parity with the reference needs it bit
// for bit: a resampled pixel one level off moves a pixel_value by 1/255/std
// (0.008 to 0.015), far past the 1e-6 the goldens hold us to.
//
// transformers 5.17's default processors (the torchvision backend:
// Gemma3ImageProcessor, SiglipImageProcessor, Qwen2VLImageProcessor, and
// the "Fast" names that now alias them) resize a uint8 CHW tensor with
// torchvision.transforms.v2.functional.resize(antialias=True). On a CPU
// whose torch capability is AVX2 or AVX512 (torchvision 0.26's
// _do_native_uint8_resize_on_cpu) both bilinear and bicubic then run
// PyTorch's native uint8 antialiased kernel (aten/src/ATen/native/cpu/
// UpSampleKernel.cpp, _compute_index_ranges_int16_weights and
// basic_loop_aa_{horizontal,vertical}<uint8_t>, which the AVX2 kernel
// matches): Pillow's filter supports and centring, weights normalised in
// float64, then rounded to int16 at the largest precision under which
// the axis's largest weight fits, a horizontal pass to uint8 and a
// vertical pass to uint8. Elsewhere (an ARM Mac, say) torchvision resizes
// bilinear through float32 instead; that path is not reproduced here.
//
// The PIL backend (Gemma3ImageProcessorPil, …) calls Pillow's
// ImagingResample (src/libImaging/Resample.c): the same scheme with
// int32 coefficients at a fixed 22 bits and its own spelling of the cubic.

// resampleFilter is a PIL resampling code: 2 bilinear, 3 bicubic.
type resampleFilter int

const (
	filterBilinear resampleFilter = 2
	filterBicubic  resampleFilter = 3
)

// coeffStyle picks whose fixed-point coefficients to use.
type coeffStyle int

const (
	torchCoeffs coeffStyle = iota // int16 at a per-axis precision (torch)
	pilCoeffs                     // int32 at 22 bits (Pillow)
)

func (f resampleFilter) support() float64 {
	if f == filterBicubic {
		return 2
	}
	return 1
}

// weight is the filter at x, spelled as the reference spells it: the
// cubic's outer lobe is ((a·x − 5a)·x + 8a)·x − 4a in torch
// (cubic_convolution2) and (((x − 5)·x + 8)·x − 4)·a in Pillow, which
// round differently.
func (f resampleFilter) weight(x float64, style coeffStyle) float64 {
	x = math.Abs(x)
	if f == filterBicubic {
		const a = -0.5
		if x < 1 {
			return ((a+2)*x-(a+3))*x*x + 1
		}
		if x < 2 {
			if style == pilCoeffs {
				return (((x-5)*x+8)*x - 4) * a
			}
			return ((a*x-5*a)*x+8*a)*x - 4*a
		}
		return 0
	}
	if x < 1 {
		return 1 - x
	}
	return 0
}

// axisCoeffs are one axis's taps: output i reads in[first[i]+j] for
// j < count[i] with weight k[i*taps+j], in fixed point at prec bits.
type axisCoeffs struct {
	first, count []int
	k            []int32
	taps         int
	prec         uint
}

func computeAxis(in, out int, f resampleFilter, style coeffStyle) axisCoeffs {
	scale := float64(in) / float64(out)
	filterScale := math.Max(scale, 1)
	support := f.support() * filterScale
	taps := int(math.Ceil(support))*2 + 1
	invScale := 1 / filterScale
	ax := axisCoeffs{first: make([]int, out), count: make([]int, out), k: make([]int32, out*taps), taps: taps}
	w := make([]float64, out*taps)
	wmax := 0.0
	for i := 0; i < out; i++ {
		center := scale * (float64(i) + 0.5)
		xmin := max(int(center-support+0.5), 0) // C casts truncate toward zero
		xsize := min(int(center+support+0.5), in) - xmin
		xsize = max(0, min(xsize, taps))
		row := w[i*taps : (i+1)*taps]
		total := 0.0
		for j := 0; j < xsize; j++ {
			v := f.weight((float64(j+xmin)-center+0.5)*invScale, style)
			row[j] = v
			total += v
		}
		if total != 0 {
			for j := 0; j < xsize; j++ {
				row[j] /= total
				wmax = math.Max(wmax, row[j])
			}
		}
		ax.first[i], ax.count[i] = xmin, xsize
	}
	if style == pilCoeffs {
		ax.prec = 22
	} else {
		// the largest precision at which round(wmax·2^(p+1)) stays under 2^15
		for ax.prec = 0; ax.prec < 22; ax.prec++ {
			if int(0.5+wmax*float64(int(1)<<(ax.prec+1))) >= 1<<15 {
				break
			}
		}
	}
	s := float64(int(1) << ax.prec)
	for i, v := range w {
		v *= s
		if v < 0 {
			ax.k[i] = int32(int(-0.5 + v))
		} else {
			ax.k[i] = int32(int(0.5 + v))
		}
		if style == torchCoeffs {
			ax.k[i] = int32(int16(ax.k[i]))
		}
	}
	return ax
}

// resizeRGB resizes interleaved 8-bit RGB from w×h to ow×oh with
// antialiasing: the horizontal pass first (skipped when the width stays),
// then the vertical pass (skipped when the height stays), each rounding to
// uint8 as the reference's fixed-point kernels do.
func resizeRGB(src []uint8, w, h, ow, oh int, f resampleFilter, style coeffStyle) []uint8 {
	if ow == w && oh == h {
		return append([]uint8(nil), src...)
	}
	cur, cw := src, w
	if ow != w {
		ax := computeAxis(w, ow, f, style)
		tmp := make([]uint8, 3*ow*h)
		half := int64(1) << (ax.prec - 1)
		for y := 0; y < h; y++ {
			in := cur[3*y*cw : 3*(y+1)*cw]
			outRow := tmp[3*y*ow : 3*(y+1)*ow]
			for x := 0; x < ow; x++ {
				k := ax.k[x*ax.taps : x*ax.taps+ax.count[x]]
				base := 3 * ax.first[x]
				s0, s1, s2 := half, half, half
				for j, kv := range k {
					p := in[base+3*j : base+3*j+3]
					s0 += int64(p[0]) * int64(kv)
					s1 += int64(p[1]) * int64(kv)
					s2 += int64(p[2]) * int64(kv)
				}
				outRow[3*x] = clampShift(s0, ax.prec)
				outRow[3*x+1] = clampShift(s1, ax.prec)
				outRow[3*x+2] = clampShift(s2, ax.prec)
			}
		}
		cur, cw = tmp, ow
	}
	if oh != h {
		ax := computeAxis(h, oh, f, style)
		dst := make([]uint8, 3*cw*oh)
		half := int64(1) << (ax.prec - 1)
		acc := make([]int64, 3*cw)
		for y := 0; y < oh; y++ {
			for i := range acc {
				acc[i] = half
			}
			k := ax.k[y*ax.taps : y*ax.taps+ax.count[y]]
			for j, kv := range k {
				row := cur[3*(ax.first[y]+j)*cw : 3*(ax.first[y]+j+1)*cw]
				for i, p := range row {
					acc[i] += int64(p) * int64(kv)
				}
			}
			outRow := dst[3*y*cw : 3*(y+1)*cw]
			for i, s := range acc {
				outRow[i] = clampShift(s, ax.prec)
			}
		}
		cur = dst
	}
	return cur
}

func clampShift(s int64, prec uint) uint8 {
	v := s >> prec
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}
