package media

import (
	"bytes"
	"encoding/binary"
)

// exifOrientation reads the EXIF Orientation tag (0x0112 in IFD0) where
// Pillow's getexif finds it: a JPEG's first APP1 "Exif" segment, a PNG's
// eXIf chunk, a WebP's EXIF chunk. It returns 1 (as stored) when there is
// none or the block is malformed: a broken EXIF block never fails a
// picture, as it does not in Pillow.
func exifOrientation(format string, data []byte) int {
	var tiff []byte
	switch format {
	case "jpeg":
		tiff = jpegExif(data)
	case "png":
		tiff = pngExif(data)
	case "webp":
		tiff = webpExif(data)
	}
	if tiff == nil {
		return 1
	}
	return tiffOrientation(bytes.TrimPrefix(tiff, []byte("Exif\x00\x00")))
}

// jpegExif returns the TIFF block of the first APP1 segment that starts
// with "Exif\0\0", scanning the markers before the first SOS.
func jpegExif(b []byte) []byte {
	pos := 2
	for pos+4 <= len(b) {
		if b[pos] != 0xFF {
			return nil
		}
		m := b[pos+1]
		switch {
		case m == 0xFF: // fill byte
			pos++
			continue
		case m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7):
			pos += 2
			continue
		case m == 0xDA || m == 0xD9: // start of scan, end of image
			return nil
		}
		n := int(binary.BigEndian.Uint16(b[pos+2:]))
		if n < 2 || pos+2+n > len(b) {
			return nil
		}
		seg := b[pos+4 : pos+2+n]
		if m == 0xE1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return seg[6:]
		}
		pos += 2 + n
	}
	return nil
}

// pngExif returns the first eXIf chunk's data, before or after IDAT.
func pngExif(b []byte) []byte {
	pos := 8
	for pos+12 <= len(b) {
		n := int(binary.BigEndian.Uint32(b[pos:]))
		if n < 0 || n > len(b)-pos-12 {
			return nil
		}
		typ := string(b[pos+4 : pos+8])
		if typ == "eXIf" {
			return b[pos+8 : pos+8+n]
		}
		if typ == "IEND" {
			return nil
		}
		pos += 12 + n
	}
	return nil
}

// webpExif returns the EXIF chunk of an extended (VP8X) WebP file.
func webpExif(b []byte) []byte {
	pos := 12
	for pos+8 <= len(b) {
		n := int(binary.LittleEndian.Uint32(b[pos+4:]))
		if n < 0 || n > len(b)-pos-8 {
			return nil
		}
		if string(b[pos:pos+4]) == "EXIF" {
			return b[pos+8 : pos+8+n]
		}
		pos += 8 + n + n&1
	}
	return nil
}

// tiffOrientation reads tag 0x0112 of IFD0 from a TIFF block ("II" or
// "MM"), where it is a single BYTE, SHORT or LONG; anything else is 1.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	if bo.Uint16(t[2:]) != 42 {
		return 1
	}
	off := int64(bo.Uint32(t[4:]))
	if off < 8 || off+2 > int64(len(t)) {
		return 1
	}
	n := int64(bo.Uint16(t[off:]))
	for i := int64(0); i < n; i++ {
		e := off + 2 + 12*i
		if e+12 > int64(len(t)) {
			return 1
		}
		if bo.Uint16(t[e:]) != 0x0112 {
			continue
		}
		typ, count := bo.Uint16(t[e+2:]), bo.Uint32(t[e+4:])
		if count != 1 {
			return 1
		}
		var v int
		switch typ {
		case 1: // BYTE
			v = int(t[e+8])
		case 3: // SHORT
			v = int(bo.Uint16(t[e+8:]))
		case 4: // LONG
			v = int(bo.Uint32(t[e+8:]))
		default:
			return 1
		}
		if v < 1 || v > 8 {
			return 1
		}
		return v
	}
	return 1
}

// orient applies an EXIF orientation the way ImageOps.exif_transpose
// does: 2 FLIP_LEFT_RIGHT, 3 ROTATE_180, 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE,
// 6 ROTATE_270 (a quarter turn clockwise), 7 TRANSVERSE, 8 ROTATE_90 (a
// quarter turn counter-clockwise).
func orient(m Image, o int) Image {
	if o < 2 || o > 8 {
		return m
	}
	w, h := m.Width, m.Height
	ow, oh := w, h
	if o >= 5 {
		ow, oh = h, w
	}
	out := Image{Width: ow, Height: oh, Pix: make([]uint8, len(m.Pix))}
	for y := 0; y < oh; y++ {
		for x := 0; x < ow; x++ {
			// (sx, sy): the source pixel that lands on (x, y)
			var sx, sy int
			switch o {
			case 2:
				sx, sy = w-1-x, y
			case 3:
				sx, sy = w-1-x, h-1-y
			case 4:
				sx, sy = x, h-1-y
			case 5:
				sx, sy = y, x
			case 6:
				sx, sy = y, h-1-x
			case 7:
				sx, sy = w-1-y, h-1-x
			case 8:
				sx, sy = w-1-y, x
			}
			copy(out.Pix[3*(y*ow+x):3*(y*ow+x)+3], m.Pix[3*(sy*w+sx):])
		}
	}
	return out
}
