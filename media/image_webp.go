package media

import "image"

// Lossy WebP is VP8, whose decoding is normative, so x/image/webp's Y, U
// and V planes are libwebp's. What Pillow (through libwebp's default
// "fancy" upsampling, src/dec/io_dec.c EmitFancyRGB and
// src/dsp/upsampling.c UpsampleRgbLinePair) and Go differ in is the
// chroma upsampling and the YUV→RGB constants (src/dsp/yuv.h); webpRGB
// does both libwebp's way, so a lossy WebP decodes to Pillow's RGB.

func webpRGB(m *image.YCbCr) Image {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := Image{Width: w, Height: h, Pix: make([]uint8, 3*w*h)}
	if m.SubsampleRatio != image.YCbCrSubsampleRatio420 {
		ycbcrToRGB(m, out.Pix, w, h)
		return out
	}
	uvRows := (h + 1) / 2
	for r := 0; r < h; r++ {
		// Each output row is the top or bottom line of a pair of chroma
		// rows (t nearer for a top line, c nearer for a bottom line).
		var t, c int
		top := true
		switch {
		case r == 0:
			t, c = 0, 0
		case r%2 == 1:
			k := (r + 1) / 2
			if k < uvRows && r+1 < h {
				t, c = k-1, k
			} else { // the last row of an even-height picture
				t, c = k-1, k-1
			}
		default:
			k := r / 2
			t, c, top = k-1, k, false
		}
		webpRow(m, r, t, c, top, out.Pix[3*r*w:3*(r+1)*w], w)
	}
	return out
}

// webpRow converts one row with UpsampleRgbLinePair's arithmetic on the
// chroma rows t (above) and c (below).
func webpRow(m *image.YCbCr, r, t, c int, top bool, dst []uint8, w int) {
	yrow := m.Y[r*m.YStride:]
	tu, tv := m.Cb[t*m.CStride:], m.Cr[t*m.CStride:]
	cu, cv := m.Cb[c*m.CStride:], m.Cr[c*m.CStride:]
	// near/far: the chroma row nearer this line, and the other
	nu, nv, fu, fv := tu, tv, cu, cv
	if !top {
		nu, nv, fu, fv = cu, cv, tu, tv
	}
	put := func(x int, u, v int) {
		y := int(yrow[x])
		o := 3 * x
		dst[o] = webpClip(mulHi(y, 19077) + mulHi(v, 26149) - 14234)
		dst[o+1] = webpClip(mulHi(y, 19077) - mulHi(u, 6419) - mulHi(v, 13320) + 8708)
		dst[o+2] = webpClip(mulHi(y, 19077) + mulHi(u, 33050) - 17685)
	}
	edge := func(x, cx int) {
		put(x, (3*int(nu[cx])+int(fu[cx])+2)>>2, (3*int(nv[cx])+int(fv[cx])+2)>>2)
	}
	edge(0, 0)
	last := (w - 1) >> 1
	for x := 1; x <= last; x++ {
		pair := func(tl, tt, l, cc uint8) (int, int) {
			avg := int(tl) + int(tt) + int(l) + int(cc) + 8
			d12 := (avg + 2*(int(tt)+int(l))) >> 3
			d03 := (avg + 2*(int(tl)+int(cc))) >> 3
			if top {
				return (d12 + int(tl)) >> 1, (d03 + int(tt)) >> 1
			}
			return (d03 + int(l)) >> 1, (d12 + int(cc)) >> 1
		}
		u0, u1 := pair(tu[x-1], tu[x], cu[x-1], cu[x])
		v0, v1 := pair(tv[x-1], tv[x], cv[x-1], cv[x])
		put(2*x-1, u0, v0)
		put(2*x, u1, v1)
	}
	if w&1 == 0 {
		edge(w-1, last)
	}
}

func mulHi(v, c int) int { return (v * c) >> 8 }

func webpClip(v int) uint8 {
	if v&^(256<<6-1) == 0 {
		return uint8(v >> 6)
	}
	if v < 0 {
		return 0
	}
	return 255
}
