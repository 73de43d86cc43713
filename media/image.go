package media

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"strings"

	"golang.org/x/image/webp"
)

// DecodeImage decodes a JPEG, PNG, GIF (its first frame), WebP or HEIC
// file into 8-bit RGB, as a Hugging Face user's code sees it: Pillow's
// Image.open, then ImageOps.exif_transpose (transformers itself applies
// no EXIF orientation; Hearth does, for all eight orientations), then
// convert("RGB"), which is what transformers 5.17's convert_to_rgb does.
// convert("RGB") drops alpha: a transparent pixel keeps the colour stored
// under it; nothing is blended on white.
//
// Pixel for pixel this equals Pillow's result for PNG, GIF and WebP
// (lossy WebP too: VP8 decoding is normative and libwebp's fancy chroma
// upsampling and YUV→RGB are reproduced), including Pillow's own
// conversions: 16-bit colour keeps the high byte, while 16-bit grayscale
// ("I;16") is clipped at 255, not scaled, exactly as Pillow converts it.
// For JPEG, libjpeg-turbo's fancy chroma upsampling and YCbCr→RGB tables
// are reproduced on Go's decoded planes; Go's IDCT still rounds a few
// samples one level (rarely two or three) away from libjpeg-turbo's
// (media/image_test.go measures it). Like libjpeg and Pillow, a JPEG
// without its EOI marker and a PNG without its IEND chunk are read; files
// cut inside their pixel data are refused.
//
// Limits are checked before any pixel is decoded: the file's size against
// MaxBytes, then the width and height its header states against
// MaxPixels (and a JPEG's scan count against 256, since every
// progressive scan walks the whole picture). Every error that is the
// input's fault wraps ErrMedia and names what is wrong; no input panics.
func DecodeImage(data []byte, lim Limits) (Image, error) {
	lim = lim.withDefaults()
	if len(data) == 0 {
		return Image{}, mediaErr("image: the file is empty")
	}
	if int64(len(data)) > lim.MaxBytes {
		return Image{}, mediaErr("image: %s is over the %s limit", sizeString(int64(len(data))), sizeString(lim.MaxBytes))
	}
	format := sniff(data)
	switch format {
	case "heic":
		return decodeHEIC(data, lim)
	case "":
		return Image{}, mediaErr("image: unrecognised file format (send JPEG, PNG, GIF, WebP or HEIC)")
	case "jpeg", "png", "gif", "webp":
	default:
		return Image{}, mediaErr("image: %s files are not supported (send JPEG, PNG, GIF, WebP or HEIC)", format)
	}

	cfg, err := decodeConfig(format, data)
	if err != nil {
		return Image{}, mediaErr("image: corrupt %s header: %v", formatName(format), cleanErr(err))
	}
	if err := checkDims(cfg.Width, cfg.Height, lim); err != nil {
		return Image{}, err
	}

	var rgb Image
	switch format {
	case "jpeg":
		// Each progressive scan walks every block of the picture; a small
		// file of thousands of scans would take minutes to decode.
		if jpegScans(data) > maxJPEGScans {
			return Image{}, mediaErr("image: the JPEG has more than %d scans", maxJPEGScans)
		}
		m, err := jpeg.Decode(bytes.NewReader(data))
		if err != nil && truncated(err) && !bytes.HasSuffix(data, []byte{0xFF, 0xD9}) {
			// libjpeg (and so Pillow) supplies a missing EOI marker; Go
			// wants one. A file cut inside its scan data still fails.
			if m2, err2 := jpeg.Decode(io.MultiReader(bytes.NewReader(data), bytes.NewReader([]byte{0xFF, 0xD9}))); err2 == nil {
				m, err = m2, nil
			}
		}
		if err != nil {
			return Image{}, decodeErr(format, err)
		}
		if yc, ok := m.(*image.YCbCr); ok {
			rgb = jpegRGB(yc)
		} else if rgb, err = toRGB(m); err != nil {
			return Image{}, err
		}
	case "png":
		m, err := png.Decode(bytes.NewReader(data))
		if err != nil && truncated(err) {
			// Pillow stops reading once the pixels are in; Go also wants
			// the IEND chunk. Supply one: a file cut inside its pixel data
			// still fails.
			if m2, err2 := png.Decode(io.MultiReader(bytes.NewReader(data), bytes.NewReader(pngIEND))); err2 == nil {
				m, err = m2, nil
			}
		}
		if err != nil {
			return Image{}, decodeErr(format, err)
		}
		rgb, err = toRGB(m)
		if err != nil {
			return Image{}, err
		}
	case "gif":
		m, err := gif.Decode(bytes.NewReader(data))
		if err != nil {
			return Image{}, decodeErr(format, err)
		}
		pm, ok := m.(*image.Paletted)
		if !ok {
			return Image{}, mediaErr("image: corrupt GIF: unexpected frame type %T", m)
		}
		rgb = gifFirstFrame(data, pm, cfg.Width, cfg.Height)
	case "webp":
		m, err := webp.Decode(bytes.NewReader(data))
		if err != nil {
			return Image{}, decodeErr(format, err)
		}
		switch m := m.(type) {
		case *image.YCbCr:
			rgb = webpRGB(m)
		case *image.NYCbCrA: // alpha dropped
			rgb = webpRGB(&m.YCbCr)
		default:
			if rgb, err = toRGB(m); err != nil {
				return Image{}, err
			}
		}
	}
	if rgb.Width != cfg.Width || rgb.Height != cfg.Height {
		return Image{}, mediaErr("image: corrupt %s: header says %d×%d but the picture is %d×%d",
			formatName(format), cfg.Width, cfg.Height, rgb.Width, rgb.Height)
	}
	return orient(rgb, exifOrientation(format, data)), nil
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxPixels <= 0 {
		l.MaxPixels = DefaultMaxPixels
	}
	if l.MaxFrames <= 0 {
		l.MaxFrames = DefaultMaxFrames
	}
	return l
}

// checkDims refuses a zero or negative dimension and a picture of more
// than lim.MaxPixels pixels, from the header's numbers alone.
func checkDims(w, h int, lim Limits) error {
	if w <= 0 || h <= 0 {
		return mediaErr("image: the header says %d×%d; a picture needs at least one pixel each way", w, h)
	}
	if px := int64(w) * int64(h); px > int64(lim.MaxPixels) {
		return mediaErr("image: %d×%d is %s megapixels, over the %s-megapixel limit",
			w, h, megapixels(px), megapixels(int64(lim.MaxPixels)))
	}
	return nil
}

func mediaErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMedia}, args...)...)
}

var pngIEND = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}

// truncated reports whether a decoder's error says the data ended early.
func truncated(err error) bool {
	msg := err.Error()
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		strings.Contains(msg, "not enough pixel data") || strings.Contains(msg, "short Huffman data") ||
		strings.Contains(msg, "unexpected EOF")
}

func decodeErr(format string, err error) error {
	if truncated(err) {
		return mediaErr("image: the %s file is truncated", formatName(format))
	}
	return mediaErr("image: corrupt %s: %v", formatName(format), cleanErr(err))
}

// cleanErr turns io.EOF (a header cut short) into words.
func cleanErr(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the file ends too early"
	}
	return err.Error()
}

func megapixels(px int64) string {
	mp := float64(px) / 1e6
	if mp >= 10 || mp == float64(int64(mp)) {
		return fmt.Sprintf("%.0f", mp)
	}
	return fmt.Sprintf("%.1f", mp)
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func formatName(f string) string {
	switch f {
	case "jpeg":
		return "JPEG"
	case "png":
		return "PNG"
	case "gif":
		return "GIF"
	case "webp":
		return "WebP"
	}
	return f
}

// sniff names the file's format from its first bytes: one of jpeg, png,
// gif, webp, heic, a name for a format we refuse (bmp, tiff, avif, …), or
// "" for none we know.
func sniff(b []byte) string {
	switch {
	case len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return "jpeg"
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "gif"
	case len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	case isHEIC(b):
		return "heic"
	case len(b) >= 12 && string(b[4:8]) == "ftyp" && (string(b[8:12]) == "avif" || string(b[8:12]) == "avis"):
		return "AVIF"
	case bytes.HasPrefix(b, []byte("BM")) && len(b) >= 26:
		return "BMP"
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "TIFF"
	case bytes.HasPrefix(b, []byte("\x00\x00\x01\x00")):
		return "ICO"
	case bytes.HasPrefix(b, []byte("\xFF\x0A")), bytes.HasPrefix(b, []byte("\x00\x00\x00\x0CJXL ")):
		return "JPEG XL"
	case bytes.HasPrefix(b, []byte("%PDF")):
		return "PDF"
	case bytes.HasPrefix(b, []byte("<svg")), bytes.HasPrefix(b, []byte("<?xml")):
		return "SVG"
	}
	return ""
}

func decodeConfig(format string, data []byte) (image.Config, error) {
	r := bytes.NewReader(data)
	switch format {
	case "jpeg":
		return jpeg.DecodeConfig(r)
	case "png":
		return png.DecodeConfig(r)
	case "gif":
		return gif.DecodeConfig(r)
	case "webp":
		return webp.DecodeConfig(r)
	}
	return image.Config{}, fmt.Errorf("no decoder for %s", format)
}

// toRGB converts a decoded picture to RGB the way Pillow's convert("RGB")
// does for the mode Pillow opens the same file in.
func toRGB(m image.Image) (Image, error) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 {
		return Image{}, mediaErr("image: the picture is %d×%d", w, h)
	}
	out := Image{Width: w, Height: h, Pix: make([]uint8, 3*w*h)}
	p := out.Pix
	switch m := m.(type) {
	case *image.RGBA: // PNG truecolour without alpha (alpha is 255 there)
		for y := 0; y < h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := 0; x < w; x++ {
				copy(p[3*(y*w+x):], row[4*x:4*x+3])
			}
		}
	case *image.NRGBA: // PNG RGBA, gray+alpha, tRNS; lossless WebP: alpha dropped, RGB as stored
		for y := 0; y < h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := 0; x < w; x++ {
				copy(p[3*(y*w+x):], row[4*x:4*x+3])
			}
		}
	case *image.RGBA64: // 16-bit PNG without alpha: Pillow keeps the high byte
		for y := 0; y < h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := 0; x < w; x++ {
				o := 3 * (y*w + x)
				p[o], p[o+1], p[o+2] = row[8*x], row[8*x+2], row[8*x+4]
			}
		}
	case *image.NRGBA64: // 16-bit PNG with alpha (RGBA or gray+alpha): high byte
		for y := 0; y < h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := 0; x < w; x++ {
				o := 3 * (y*w + x)
				p[o], p[o+1], p[o+2] = row[8*x], row[8*x+2], row[8*x+4]
			}
		}
	case *image.Gray:
		for y := 0; y < h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := 0; x < w; x++ {
				v := row[x]
				o := 3 * (y*w + x)
				p[o], p[o+1], p[o+2] = v, v, v
			}
		}
	case *image.Gray16:
		// Pillow opens a 16-bit grayscale PNG as "I;16" and converts it to
		// RGB by clipping at 255 (I16_RGB in Convert.c), not by scaling:
		// matched here because it is what the reference processors see.
		for y := 0; y < h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := 0; x < w; x++ {
				v := uint8(255)
				if row[2*x] == 0 {
					v = row[2*x+1]
				}
				o := 3 * (y*w + x)
				p[o], p[o+1], p[o+2] = v, v, v
			}
		}
	case *image.Paletted: // PNG palette: the palette's RGB, alpha ignored
		pal := paletteRGB(m.Palette)
		for y := 0; y < h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := 0; x < w; x++ {
				c := pal[row[x]]
				copy(p[3*(y*w+x):], c[:])
			}
		}
	case *image.YCbCr:
		ycbcrToRGB(m, p, w, h)
	case *image.NYCbCrA:
		ycbcrToRGB(&m.YCbCr, p, w, h)
	case *image.CMYK:
		// Adobe JPEGs: Go has already undone the inversion; Pillow's
		// cmyk2rgb: nk - MULDIV255(c, nk), nk = 255 - k.
		for y := 0; y < h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			for x := 0; x < w; x++ {
				nk := 255 - int(row[4*x+3])
				o := 3 * (y*w + x)
				for c := 0; c < 3; c++ {
					p[o+c] = clip8(nk - muldiv255(int(row[4*x+c]), nk))
				}
			}
		}
	default:
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				c := color.NRGBAModel.Convert(m.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
				o := 3 * (y*w + x)
				p[o], p[o+1], p[o+2] = c.R, c.G, c.B
			}
		}
	}
	return out, nil
}

func muldiv255(a, b int) int {
	t := a*b + 128
	return ((t >> 8) + t) >> 8
}

func clip8(v int) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// paletteRGB gives every palette entry's stored RGB, alpha ignored (not
// premultiplied, as color.Color's RGBA method would give it); indexes past
// the palette's end are black.
func paletteRGB(pal color.Palette) [256][3]uint8 {
	var out [256][3]uint8
	for i, c := range pal {
		if i >= 256 {
			break
		}
		switch c := c.(type) {
		case nil:
		case color.NRGBA:
			out[i] = [3]uint8{c.R, c.G, c.B}
		case color.RGBA:
			out[i] = [3]uint8{c.R, c.G, c.B}
		default:
			n := color.NRGBAModel.Convert(c).(color.NRGBA)
			out[i] = [3]uint8{n.R, n.G, n.B}
		}
	}
	return out
}

func ycbcrToRGB(m *image.YCbCr, p []uint8, w, h int) {
	b := m.Bounds()
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			yi := m.YOffset(b.Min.X+x, b.Min.Y+y)
			ci := m.COffset(b.Min.X+x, b.Min.Y+y)
			r, g, bb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
			o := 3 * (y*w + x)
			p[o], p[o+1], p[o+2] = r, g, bb
		}
	}
}

// gifFirstFrame is the first frame as Pillow gives it: the logical screen's
// size, filled with the transparent index (index 0 if there is none)
// where the frame does not cover it, each index mapped to the colour the
// file's colour table stores for it; Go's decoder has replaced the
// transparent index's colour by transparent black, so the original is
// read back from the file.
func gifFirstFrame(data []byte, pm *image.Paletted, sw, sh int) Image {
	pal := paletteRGB(pm.Palette)
	fill := 0
	if info, ok := scanGIF(data); ok {
		if info.transparent >= 0 {
			fill = info.transparent
			if info.transparent < len(info.table) {
				pal[info.transparent] = info.table[info.transparent]
			} else if info.transparent < 256 {
				pal[info.transparent] = [3]uint8{}
			}
		}
	}
	out := Image{Width: sw, Height: sh, Pix: make([]uint8, 3*sw*sh)}
	fc := pal[fill&255]
	for i := 0; i < sw*sh; i++ {
		copy(out.Pix[3*i:], fc[:])
	}
	b := pm.Bounds().Intersect(image.Rect(0, 0, sw, sh))
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := pal[pm.Pix[pm.PixOffset(x, y)]]
			copy(out.Pix[3*(y*sw+x):], c[:])
		}
	}
	return out
}

type gifInfo struct {
	table       [][3]uint8 // the first frame's colour table (local, else global)
	transparent int        // its transparent index, or -1
}

// scanGIF walks the GIF's blocks up to the first image descriptor.
func scanGIF(b []byte) (gifInfo, bool) {
	info := gifInfo{transparent: -1}
	if len(b) < 13 {
		return info, false
	}
	pos := 13
	readTable := func(flags byte) ([][3]uint8, bool) {
		n := 1 << (1 + int(flags&7))
		if pos+3*n > len(b) {
			return nil, false
		}
		t := make([][3]uint8, n)
		for i := range t {
			copy(t[i][:], b[pos+3*i:pos+3*i+3])
		}
		pos += 3 * n
		return t, true
	}
	var global [][3]uint8
	if b[10]&0x80 != 0 {
		t, ok := readTable(b[10])
		if !ok {
			return info, false
		}
		global = t
	}
	for pos < len(b) {
		switch b[pos] {
		case 0x21: // extension
			if pos+2 > len(b) {
				return info, false
			}
			label := b[pos+1]
			pos += 2
			first := true
			for {
				if pos >= len(b) {
					return info, false
				}
				n := int(b[pos])
				pos++
				if n == 0 {
					break
				}
				if pos+n > len(b) {
					return info, false
				}
				if label == 0xF9 && first && n >= 4 {
					if b[pos]&1 != 0 {
						info.transparent = int(b[pos+3])
					} else {
						info.transparent = -1
					}
				}
				first = false
				pos += n
			}
		case 0x2C: // image descriptor
			if pos+10 > len(b) {
				return info, false
			}
			flags := b[pos+9]
			pos += 10
			info.table = global
			if flags&0x80 != 0 {
				t, ok := readTable(flags)
				if !ok {
					return info, false
				}
				info.table = t
			}
			return info, true
		default:
			return info, false
		}
	}
	return info, false
}
