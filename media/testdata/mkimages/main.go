// Command mkimages writes the media package's committed test pictures to
// testdata/media/ (run from the repository root:
// go run ./media/testdata/mkimages). Every picture is computed from fixed
// seeds, so a rerun writes the same bytes (the WebP files come from
// Debian's cwebp, which must be on PATH; without it they are left as they
// are). The goldens in testdata/media/golden are made from these files by
// tools/oracle/make_media_goldens.py.
package main

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"log"
	"os"
	"os/exec"
	"path/filepath"
)

var out = filepath.Join("testdata", "media")

// rng is xorshift32: small, fixed, and the same everywhere.
type rng uint32

func (r *rng) next() uint32 {
	x := uint32(*r)
	x ^= x << 13
	x ^= x >> 17
	x ^= x << 5
	*r = rng(x)
	return x
}

func clamp(v int) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// scene is the picture every file draws from: diagonal gradients, a
// checkerboard of sharp edges, a patch of noise and dark text-like
// strokes, sized w×h. noise is the amplitude of the noise added
// everywhere (the patch has full noise).
func scene(w, h int, seed uint32, noise int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rng(seed)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx := 0
			if w > 1 {
				fx = x * 255 / (w - 1)
			}
			fy := 0
			if h > 1 {
				fy = y * 255 / (h - 1)
			}
			cr, cg, cb := fx, fy, (x*7+y*3)%256
			// sharp-edged checkerboard in the right third
			if x > 2*w/3 && ((x/5)+(y/4))%2 == 0 {
				cr, cg, cb = 250-cr/4, 20+cg/5, 240
			}
			n := 0
			if noise > 0 {
				n = int(r.next()%uint32(2*noise+1)) - noise
			}
			// full-range noise patch in the lower left quarter
			if x < w/4 && y > 3*h/4 {
				v := r.next()
				cr, cg, cb = int(v&255), int(v>>8&255), int(v>>16&255)
			}
			m.Pix[m.PixOffset(x, y)+0] = clamp(cr + n)
			m.Pix[m.PixOffset(x, y)+1] = clamp(cg - n)
			m.Pix[m.PixOffset(x, y)+2] = clamp(cb + n/2)
			m.Pix[m.PixOffset(x, y)+3] = 255
		}
	}
	strokes(m, seed)
	return m
}

// strokes draws letter-like marks: vertical and horizontal bars and
// diagonals, one or two pixels wide, in near-black.
func strokes(m *image.NRGBA, seed uint32) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	r := rng(seed*2654435761 + 1)
	glyph := max(3, min(w, h)/6)
	for gy := 1; gy+glyph < h; gy += glyph + glyph/2 {
		for gx := 1; gx+glyph < w/2; gx += glyph {
			k := r.next()
			set := func(x, y int) {
				if x >= 0 && y >= 0 && x < w && y < h {
					o := m.PixOffset(x, y)
					m.Pix[o], m.Pix[o+1], m.Pix[o+2] = 12, 10, 30
				}
			}
			for i := 0; i < glyph-1; i++ {
				if k&1 != 0 {
					set(gx, gy+i) // left bar
				}
				if k&2 != 0 {
					set(gx+glyph-2, gy+i) // right bar
				}
				if k&4 != 0 {
					set(gx+i*(glyph-2)/(glyph-1), gy) // top
				}
				if k&8 != 0 {
					set(gx+i*(glyph-2)/(glyph-1), gy+glyph/2) // middle
				}
				if k&16 != 0 {
					set(gx+i*(glyph-2)/(glyph-1), gy+i) // diagonal
				}
			}
		}
	}
}

func write(name string, data []byte) {
	if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%-24s %7d bytes", name, len(data))
}

func encPNG(m image.Image) []byte {
	var b bytes.Buffer
	e := png.Encoder{CompressionLevel: png.BestCompression}
	if err := e.Encode(&b, m); err != nil {
		log.Fatal(err)
	}
	return b.Bytes()
}

func encJPEG(m image.Image, q int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: q}); err != nil {
		log.Fatal(err)
	}
	return b.Bytes()
}

// exifTIFF is a TIFF block with one IFD0 entry, Orientation (0x0112,
// SHORT) = o, in the given byte order.
func exifTIFF(o uint16, bo binary.ByteOrder) []byte {
	t := make([]byte, 8+2+12+4)
	if bo == binary.LittleEndian {
		copy(t, "II")
	} else {
		copy(t, "MM")
	}
	bo.PutUint16(t[2:], 42)
	bo.PutUint32(t[4:], 8)
	bo.PutUint16(t[8:], 1)
	bo.PutUint16(t[10:], 0x0112)
	bo.PutUint16(t[12:], 3)
	bo.PutUint32(t[14:], 1)
	bo.PutUint16(t[18:], o)
	bo.PutUint32(t[22:], 0)
	return t
}

// withExif puts an APP1 Exif segment right after the JPEG's SOI.
func withExif(j []byte, o uint16, bo binary.ByteOrder) []byte {
	payload := append([]byte("Exif\x00\x00"), exifTIFF(o, bo)...)
	seg := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	seg = append(seg, payload...)
	var b bytes.Buffer
	b.Write(j[:2])
	b.Write(seg)
	b.Write(j[2:])
	return b.Bytes()
}

func chunk(b *bytes.Buffer, typ string, data []byte) {
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(data)))
	b.Write(l[:])
	c := crc32.NewIEEE()
	c.Write([]byte(typ))
	c.Write(data)
	b.WriteString(typ)
	b.Write(data)
	binary.BigEndian.PutUint32(l[:], c.Sum32())
	b.Write(l[:])
}

// withPNGExif inserts an eXIf chunk after IHDR.
func withPNGExif(p []byte, o uint16) []byte {
	ihdrEnd := 8 + 8 + 13 + 4
	var b bytes.Buffer
	b.Write(p[:ihdrEnd])
	chunk(&b, "eXIf", exifTIFF(o, binary.BigEndian))
	b.Write(p[ihdrEnd:])
	return b.Bytes()
}

// grayAlphaPNG writes an 8-bit gray+alpha PNG (colour type 4), which Go's
// encoder never writes, by hand: filter 0 on every row.
func grayAlphaPNG(w, h int, px func(x, y int) (g, a uint8)) []byte {
	var raw bytes.Buffer
	for y := 0; y < h; y++ {
		raw.WriteByte(0)
		for x := 0; x < w; x++ {
			g, a := px(x, y)
			raw.WriteByte(g)
			raw.WriteByte(a)
		}
	}
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(raw.Bytes())
	zw.Close()
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 4
	chunk(&b, "IHDR", ihdr)
	chunk(&b, "IDAT", z.Bytes())
	chunk(&b, "IEND", nil)
	return b.Bytes()
}

func toRGB(m *image.NRGBA) *image.RGBA {
	r := image.NewRGBA(m.Bounds())
	copy(r.Pix, m.Pix)
	return r
}

func toGray(m *image.NRGBA) *image.Gray {
	g := image.NewGray(m.Bounds())
	for i := range g.Pix {
		p := m.Pix[4*i:]
		g.Pix[i] = uint8((299*int(p[0]) + 587*int(p[1]) + 114*int(p[2])) / 1000)
	}
	return g
}

func main() {
	log.SetFlags(0)
	if err := os.MkdirAll(out, 0o755); err != nil {
		log.Fatal(err)
	}

	// 1×1 and 7×3 opaque RGB.
	one := image.NewRGBA(image.Rect(0, 0, 1, 1))
	copy(one.Pix, []uint8{200, 30, 90, 255})
	write("rgb_1x1.png", encPNG(one))
	write("rgb_7x3.png", encPNG(toRGB(scene(7, 3, 7, 20))))

	// 31×17 RGBA: alpha 0, 255 and everything between.
	a := scene(31, 17, 31, 10)
	for y := 0; y < 17; y++ {
		for x := 0; x < 31; x++ {
			al := (x*255/30 + y*11) % 256
			if x == 0 {
				al = 0
			}
			a.Pix[a.PixOffset(x, y)+3] = uint8(al)
		}
	}
	write("rgba_31x17.png", encPNG(a))

	// 333×127 paletted, 16 colours, four of them partly or fully transparent.
	pal := color.Palette{}
	for i := 0; i < 16; i++ {
		al := uint8(255)
		switch i {
		case 3:
			al = 0
		case 7:
			al = 128
		case 11:
			al = 40
		case 14:
			al = 230
		}
		pal = append(pal, color.NRGBA{uint8(i * 17), uint8(255 - i*13), uint8(i * i), al})
	}
	src := scene(333, 127, 333, 0)
	pm := image.NewPaletted(src.Bounds(), pal)
	for y := 0; y < 127; y++ {
		for x := 0; x < 333; x++ {
			p := src.Pix[src.PixOffset(x, y):]
			pm.SetColorIndex(x, y, uint8((int(p[0])/64+int(p[1])/64*4)%16))
		}
	}
	write("pal_333x127.png", encPNG(pm))

	// 127×333 16-bit RGB (opaque RGBA64 is written as 16-bit truecolour).
	s16 := scene(127, 333, 127, 6)
	r16 := image.NewRGBA64(s16.Bounds())
	for y := 0; y < 333; y++ {
		for x := 0; x < 127; x++ {
			p := s16.Pix[s16.PixOffset(x, y):]
			// low bytes on both sides of 128: a decoder that rounds
			// rather than keeps the high byte would show it
			lo := uint16((x*37 + y*11) & 255)
			r16.SetRGBA64(x, y, color.RGBA64{uint16(p[0])<<8 | lo, uint16(p[1])<<8 | (255 - lo), uint16(p[2])<<8 | lo ^ 0x80, 0xffff})
		}
	}
	write("rgb16_127x333.png", encPNG(r16))

	// 640×481 opaque RGB: mostly smooth, so the PNG stays small.
	write("rgb_640x481.png", encPNG(toRGB(scene(640, 481, 640, 0))))

	// 45×29 16-bit gray, values across the whole 16-bit range.
	g16 := image.NewGray16(image.Rect(0, 0, 45, 29))
	for y := 0; y < 29; y++ {
		for x := 0; x < 45; x++ {
			g16.SetGray16(x, y, color.Gray16{uint16((x*1489 + y*2131) * 17 % 65536)})
		}
	}
	write("gray16_45x29.png", encPNG(g16))

	// 23×19 gray+alpha.
	write("graya_23x19.png", grayAlphaPNG(23, 19, func(x, y int) (uint8, uint8) {
		return uint8(x * 11), uint8((y*14 + x*3) % 256)
	}))

	// 21×13 PNG carrying an eXIf chunk with orientation 8.
	write("exif8_21x13.png", withPNGExif(encPNG(toRGB(scene(21, 13, 21, 5))), 8))

	// Colour JPEGs with EXIF orientation 6 (little-endian TIFF) and 3 (big-endian).
	write("exif6_160x120.jpg", withExif(encJPEG(scene(160, 120, 160, 4), 92), 6, binary.LittleEndian))
	write("exif3_97x61.jpg", withExif(encJPEG(scene(97, 61, 97, 4), 92), 3, binary.BigEndian))

	// Gray JPEGs, one per orientation, with a picture no flip or turn maps
	// onto itself (bright top-left corner, dark bar along the bottom).
	g := image.NewGray(image.Rect(0, 0, 13, 7))
	for y := 0; y < 7; y++ {
		for x := 0; x < 13; x++ {
			v := 60 + x*8 + y*4
			if x < 4 && y < 3 {
				v = 250
			}
			if y == 6 {
				v = 10
			}
			g.SetGray(x, y, color.Gray{uint8(v)})
		}
	}
	gj := encJPEG(g, 95)
	for o := uint16(1); o <= 8; o++ {
		write("orient"+string(rune('0'+o))+"_13x7.jpg", withExif(gj, o, binary.LittleEndian))
	}

	// A two-frame GIF whose first frame has a transparent index.
	gpal := color.Palette{color.RGBA{}} // index 0: transparent
	for i := 1; i < 16; i++ {
		gpal = append(gpal, color.RGBA{uint8(i * 16), uint8(200 - i*9), uint8(255 - i*15), 255})
	}
	anim := &gif.GIF{}
	for f := 0; f < 2; f++ {
		fr := image.NewPaletted(image.Rect(0, 0, 40, 30), gpal)
		for y := 0; y < 30; y++ {
			for x := 0; x < 40; x++ {
				fr.SetColorIndex(x, y, uint8((x/3+y/2+f*5)%16))
			}
		}
		anim.Image = append(anim.Image, fr)
		anim.Delay = append(anim.Delay, 10)
	}
	var gb bytes.Buffer
	if err := gif.EncodeAll(&gb, anim); err != nil {
		log.Fatal(err)
	}
	write("anim_40x30.gif", gb.Bytes())

	// WebP: lossless with alpha, and lossy, both through cwebp.
	if _, err := exec.LookPath("cwebp"); err != nil {
		log.Print("cwebp not found: WebP files left as they are")
		return
	}
	wa := scene(37, 23, 37, 8)
	for y := 0; y < 23; y++ {
		for x := 0; x < 37; x++ {
			wa.Pix[wa.PixOffset(x, y)+3] = uint8(255 - (x*7+y*5)%256)
		}
	}
	cwebp("lossless_37x23.webp", encPNG(wa), "-lossless", "-exact", "-z", "9")
	cwebp("lossy_33x21.webp", encPNG(toRGB(scene(33, 21, 33, 8))), "-q", "80", "-m", "6")
}

func cwebp(name string, pngData []byte, args ...string) {
	tmp, err := os.CreateTemp("", "mkimages-*.png")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	tmp.Write(pngData)
	tmp.Close()
	dst := filepath.Join(out, name)
	cmd := exec.Command("cwebp", append(append([]string{"-quiet", "-metadata", "none"}, args...), tmp.Name(), "-o", dst)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatal(err)
	}
	st, _ := os.Stat(dst)
	log.Printf("%-24s %7d bytes", name, st.Size())
}
