package media

import "image"

// libjpeg-turbo's decompression defaults, which Pillow uses, upsample
// subsampled chroma with the "fancy" triangle filter (jdsample.c) and
// convert YCbCr to RGB with 16-bit fixed-point tables (jdcolor.c). Go's
// decoder replicates chroma samples and converts with other constants;
// doing these two steps the libjpeg way on Go's decoded planes leaves only
// the two IDCTs' rounding between us and Pillow (±1 on a few samples).

// maxJPEGScans bounds the scans (SOS segments) of a JPEG we decode; an
// ordinary progressive JPEG has about ten.
const maxJPEGScans = 256

// jpegScans counts a JPEG's SOS markers, walking its segments and
// stepping over entropy-coded data (stuffed 0xFF00 and restart markers).
// It stops early once the count passes the limit.
func jpegScans(b []byte) int {
	n, pos := 0, 2
	for pos+1 < len(b) && n <= maxJPEGScans {
		if b[pos] != 0xFF {
			pos++ // entropy-coded data
			continue
		}
		m := b[pos+1]
		switch {
		case m == 0x00 || m == 0xFF || (m >= 0xD0 && m <= 0xD7) || m == 0x01:
			pos += 2
			continue
		case m == 0xD9:
			return n
		}
		if pos+4 > len(b) {
			return n
		}
		seg := int(b[pos+2])<<8 | int(b[pos+3])
		if m == 0xDA {
			n++
		}
		pos += 2 + seg
	}
	return n
}

// jpegRGB converts a decoded JPEG's YCbCr planes to RGB as libjpeg-turbo
// does.
func jpegRGB(m *image.YCbCr) Image {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := Image{Width: w, Height: h, Pix: make([]uint8, 3*w*h)}
	var hs, vs int // chroma subsampling, horizontal and vertical
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio444:
		hs, vs = 1, 1
	case image.YCbCrSubsampleRatio422:
		hs, vs = 2, 1
	case image.YCbCrSubsampleRatio420:
		hs, vs = 2, 2
	case image.YCbCrSubsampleRatio440:
		hs, vs = 1, 2
	case image.YCbCrSubsampleRatio411:
		hs, vs = 4, 1
	case image.YCbCrSubsampleRatio410:
		hs, vs = 4, 2
	default:
		ycbcrToRGB(m, out.Pix, w, h)
		return out
	}
	cw, ch := (w+hs-1)/hs, (h+vs-1)/vs // libjpeg's downsampled_width/height
	cb := upsampleChroma(m.Cb, m.CStride, cw, ch, w, h, hs, vs)
	cr := upsampleChroma(m.Cr, m.CStride, cw, ch, w, h, hs, vs)
	for y := 0; y < h; y++ {
		yrow := m.Y[(m.Rect.Min.Y+y-m.Rect.Min.Y)*m.YStride:]
		for x := 0; x < w; x++ {
			o := 3 * (y*w + x)
			yy := int(yrow[x])
			b, r := int(cb[y*w+x]), int(cr[y*w+x])
			out.Pix[o] = clip8(yy + crR[r])
			out.Pix[o+1] = clip8(yy + ((cbG[b] + crG[r]) >> 16))
			out.Pix[o+2] = clip8(yy + cbB[b])
		}
	}
	return out
}

// The tables of jdcolor.c's build_ycc_rgb_table (SCALEBITS 16).
var crR, cbB, crG, cbG [256]int

func init() {
	const one = 1 << 16
	fix := func(x float64) int { return int(x*one + 0.5) }
	for i := 0; i < 256; i++ {
		x := i - 128
		crR[i] = (fix(1.40200)*x + one/2) >> 16
		cbB[i] = (fix(1.77200)*x + one/2) >> 16
		crG[i] = -fix(0.71414) * x
		cbG[i] = -fix(0.34414)*x + one/2
	}
}

// upsampleChroma expands one cw×ch chroma plane (stride st; samples past
// cw are Go's decoded MCU padding, which libjpeg reads too) to w×h the way
// libjpeg-turbo does: h2v1/h2v2/h1v2 fancy upsampling, or plain
// replication where libjpeg uses it (4:1:1, and chroma two samples wide or
// less for the horizontal cases).
func upsampleChroma(p []uint8, st, cw, ch, w, h, hs, vs int) []uint8 {
	out := make([]uint8, w*h)
	at := func(x, y int) int {
		// rows above the first and below the last are replicas (jdmainct.c)
		y = max(0, min(y, ch-1))
		return int(p[y*st+x])
	}
	put := func(x, y, v int) {
		if x < w && y < h {
			out[y*w+x] = uint8(v)
		}
	}
	fancyH := hs == 2 && cw > 2
	switch {
	case hs == 2 && vs == 2 && fancyH: // h2v2_fancy_upsample
		for cy := 0; cy < ch; cy++ {
			for v := 0; v < 2; v++ {
				ny := cy - 1
				if v == 1 {
					ny = cy + 1
				}
				oy := 2*cy + v
				col := func(x int) int { return at(x, cy)*3 + at(x, ny) }
				this, next := col(0), col(1)
				put(0, oy, (this*4+8)>>4)
				put(1, oy, (this*3+next+7)>>4)
				last := this
				this = next
				for cx := 1; cx < cw-1; cx++ {
					next = col(cx + 1)
					put(2*cx, oy, (this*3+last+8)>>4)
					put(2*cx+1, oy, (this*3+next+7)>>4)
					last, this = this, next
				}
				put(2*(cw-1), oy, (this*3+last+8)>>4)
				put(2*(cw-1)+1, oy, (this*4+7)>>4)
			}
		}
	case hs == 2 && vs == 1 && fancyH: // h2v1_fancy_upsample
		for cy := 0; cy < ch; cy++ {
			v := at(0, cy)
			put(0, cy, v)
			put(1, cy, (v*3+at(1, cy)+2)>>2)
			for cx := 1; cx < cw-1; cx++ {
				v = at(cx, cy) * 3
				put(2*cx, cy, (v+at(cx-1, cy)+1)>>2)
				put(2*cx+1, cy, (v+at(cx+1, cy)+2)>>2)
			}
			v = at(cw-1, cy)
			put(2*(cw-1), cy, (v*3+at(cw-2, cy)+1)>>2)
			put(2*(cw-1)+1, cy, v)
		}
	case hs == 1 && vs == 2: // h1v2_fancy_upsample
		for cy := 0; cy < ch; cy++ {
			for v := 0; v < 2; v++ {
				ny, bias := cy-1, 1
				if v == 1 {
					ny, bias = cy+1, 2
				}
				for cx := 0; cx < cw; cx++ {
					put(cx, 2*cy+v, (at(cx, cy)*3+at(cx, ny)+bias)>>2)
				}
			}
		}
	default: // replication (4:4:4 is the trivial case)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				out[y*w+x] = p[(y/vs)*st+x/hs]
			}
		}
	}
	return out
}
