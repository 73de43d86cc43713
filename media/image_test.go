package media

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDecodeImageGolden decodes every committed picture and compares it
// with Pillow's Image.open → ImageOps.exif_transpose → convert("RGB"):
// bit for bit for PNG, GIF and WebP; for JPEG within the IDCTs' rounding,
// and then the orientation is checked by the error against each of the
// other seven orientations.
func TestDecodeImageGolden(t *testing.T) {
	g := loadGolden(t)
	for _, want := range g.Images {
		t.Run(want.File, func(t *testing.T) {
			if want.Error != "" {
				t.Skipf("the oracle could not decode it: %s", want.Error)
			}
			got, err := DecodeImage(readMediaFile(t, want.File), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Width != want.Width || got.Height != want.Height {
				t.Fatalf("size %d×%d, Pillow %d×%d (orientation %d)", got.Width, got.Height, want.Width, want.Height, want.Orientation)
			}
			sum := sha256.Sum256(got.Pix)
			if !lossy(want.File) {
				if hex.EncodeToString(sum[:]) != want.SHA256 {
					msg := "RGB differs from Pillow's"
					if ref := g.decodedRGB(want.File); ref != nil {
						for i := range ref {
							if ref[i] != got.Pix[i] {
								p := i / 3
								msg += fmt.Sprintf(": first at (%d,%d) channel %d: %d, Pillow %d", p%got.Width, p/got.Width, i%3, got.Pix[i], ref[i])
								break
							}
						}
					}
					t.Fatal(msg)
				}
				return
			}
			ref := g.decodedRGB(want.File)
			if ref == nil {
				t.Fatal("no stored RGB for a lossy picture")
			}
			mean, maxd := diffU8(got.Pix, ref)
			t.Logf("vs Pillow: mean |diff| %.3f, max %d", mean, maxd)
			// libjpeg's upsampling and colour conversion are matched; what
			// is left is the IDCT's rounding: ±1, rarely 2 or 3.
			if mean > 0.15 || maxd > 4 {
				t.Errorf("too far from Pillow's decode: mean |diff| %.3f, max %d", mean, maxd)
			}
			// The orientation must be the one that fits best by far.
			raw, err := DecodeImage(readMediaFile(t, want.File), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			base := orient(raw, inverseOrientation(want.Orientation))
			for o := 1; o <= 8; o++ {
				if o == max(want.Orientation, 1) {
					continue
				}
				alt := orient(base, o)
				if alt.Width != want.Width || alt.Height != want.Height {
					continue
				}
				if m, _ := diffU8(alt.Pix, ref); m < 4*mean+4 {
					t.Errorf("orientation %d fits Pillow's almost as well (mean %.2f vs %.2f)", o, m, mean)
				}
			}
		})
	}
}

// inverseOrientation gives the EXIF orientation that undoes o.
func inverseOrientation(o int) int {
	switch o {
	case 6:
		return 8
	case 8:
		return 6
	case 0:
		return 1
	}
	return o
}

func diffU8(a, b []byte) (mean float64, maxd int) {
	if len(a) != len(b) {
		return math.Inf(1), 255
	}
	s := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		s += d
		maxd = max(maxd, d)
	}
	return float64(s) / float64(len(a)), maxd
}

// TestOrientAllEight checks the eight EXIF orientations on a 3×2 picture
// against the transposes Pillow names (exif_transpose's table).
func TestOrientAllEight(t *testing.T) {
	// pixel values 1..6, row-major:  1 2 3
	//                                4 5 6
	src := Image{Width: 3, Height: 2, Pix: make([]uint8, 18)}
	for i := 0; i < 6; i++ {
		src.Pix[3*i] = uint8(i + 1)
	}
	want := map[int][]uint8{
		1: {1, 2, 3, 4, 5, 6},
		2: {3, 2, 1, 6, 5, 4}, // FLIP_LEFT_RIGHT
		3: {6, 5, 4, 3, 2, 1}, // ROTATE_180
		4: {4, 5, 6, 1, 2, 3}, // FLIP_TOP_BOTTOM
		5: {1, 4, 2, 5, 3, 6}, // TRANSPOSE (2 wide, 3 high)
		6: {4, 1, 5, 2, 6, 3}, // ROTATE_270: a quarter turn clockwise
		7: {6, 3, 5, 2, 4, 1}, // TRANSVERSE
		8: {3, 6, 2, 5, 1, 4}, // ROTATE_90: a quarter turn counter-clockwise
	}
	for o := 1; o <= 8; o++ {
		got := orient(src, o)
		if o >= 5 && (got.Width != 2 || got.Height != 3) {
			t.Fatalf("orientation %d: %d×%d", o, got.Width, got.Height)
		}
		var vals []uint8
		for i := 0; i < 6; i++ {
			vals = append(vals, got.Pix[3*i])
		}
		if !bytes.Equal(vals, want[o]) {
			t.Errorf("orientation %d: %v, want %v", o, vals, want[o])
		}
	}
}

func TestExifParsing(t *testing.T) {
	for o := uint16(1); o <= 8; o++ {
		for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			tiff := testTIFF(o, bo, 3)
			if got := tiffOrientation(tiff); got != int(o) {
				t.Errorf("%v orientation %d: read %d", bo, o, got)
			}
		}
	}
	if got := tiffOrientation(testTIFF(6, binary.LittleEndian, 4)); got != 6 {
		t.Errorf("LONG orientation: %d", got)
	}
	bad := [][]byte{nil, []byte("II"), []byte("XX*\x00\x08\x00\x00\x00"), testTIFF(9, binary.LittleEndian, 3), testTIFF(6, binary.LittleEndian, 2)}
	trunc := testTIFF(6, binary.BigEndian, 3)
	for i := range 22 { // cut before the end of the Orientation entry
		bad = append(bad, trunc[:i])
	}
	for _, b := range bad {
		if got := tiffOrientation(b); got != 1 {
			t.Errorf("malformed %x: orientation %d, want 1", b, got)
		}
	}
}

func testTIFF(o uint16, bo binary.ByteOrder, typ uint16) []byte {
	t := make([]byte, 26)
	if bo == binary.LittleEndian {
		copy(t, "II")
	} else {
		copy(t, "MM")
	}
	bo.PutUint16(t[2:], 42)
	bo.PutUint32(t[4:], 8)
	bo.PutUint16(t[8:], 1)
	bo.PutUint16(t[10:], 0x0112)
	bo.PutUint16(t[12:], typ)
	bo.PutUint32(t[14:], 1)
	if typ == 4 {
		bo.PutUint32(t[18:], uint32(o))
	} else {
		bo.PutUint16(t[18:], o)
	}
	return t
}

func TestDecodeImageErrors(t *testing.T) {
	pngData := readMediaFile(t, "rgb_640x481.png")
	jpegData := readMediaFile(t, "exif6_160x120.jpg")
	webpData := readMediaFile(t, "lossless_37x23.webp")
	gifData := readMediaFile(t, "anim_40x30.gif")
	cases := []struct {
		name string
		data []byte
		lim  Limits
		want string
	}{
		{"empty", nil, Limits{}, "empty"},
		{"zero bytes", []byte{}, Limits{}, "empty"},
		{"text", []byte("hello, this is not a picture"), Limits{}, "unrecognised"},
		{"bmp", append([]byte("BM"), make([]byte, 60)...), Limits{}, "BMP files are not supported"},
		{"png magic only", pngData[:8], Limits{}, "corrupt PNG header"},
		{"png header only", pngData[:33], Limits{}, "truncated"},
		{"png half", pngData[:len(pngData)/2], Limits{}, "truncated"},
		{"png no IEND", pngData[:len(pngData)-12], Limits{}, ""}, // Pillow reads it; so do we
		{"png bad crc", flip(pngData, 29), Limits{}, "corrupt PNG"},
		{"jpeg soi only", jpegData[:3], Limits{}, "corrupt JPEG header"},
		{"jpeg half", jpegData[:len(jpegData)/2], Limits{}, "truncated"},
		{"jpeg no eoi", jpegData[:len(jpegData)-2], Limits{}, ""}, // libjpeg supplies the EOI; so do we
		{"gif header only", gifData[:13], Limits{}, "GIF"},
		{"gif half", gifData[:len(gifData)/2], Limits{}, "GIF"},
		{"webp half", webpData[:len(webpData)/2], Limits{}, "WebP"},
		{"webp riff only", webpData[:12], Limits{}, "corrupt WebP header"},
		{"too many bytes", pngData, Limits{MaxBytes: 1000}, "over the 1000 bytes limit"},
		{"too many pixels", pngData, Limits{MaxPixels: 300_000}, "640×481 is 0.3 megapixels, over the 0.3-megapixel limit"},
		{"bomb png", pngHeader(100000, 100000), Limits{}, "100000×100000 is 10000 megapixels, over the 50-megapixel limit"},
		{"bomb jpeg", jpegHeader(60000, 60000), Limits{}, "60000×60000 is 3600 megapixels"},
		{"bomb gif", gifHeader(65535, 65535), Limits{}, "65535×65535 is 4295 megapixels"},
		{"bomb webp", webpVP8X(16000, 16000), Limits{}, "16000×16000 is 256 megapixels"},
		{"jpeg scan flood", jpegScanFlood(1000), Limits{}, "more than 256 scans"},
		{"zero width png", pngHeader(0, 10), Limits{}, "PNG"},
		{"zero height gif", gifHeader(10, 0), Limits{}, "10×0"},
		{"zero width jpeg", jpegHeader(0, 10), Limits{}, "0×10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := DecodeImage(c.data, c.lim)
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want one containing %q", c.want)
			}
			if !errors.Is(err, ErrMedia) {
				t.Errorf("error %q does not wrap ErrMedia", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
			if d := time.Since(start); strings.HasPrefix(c.name, "bomb") && d > 50*time.Millisecond {
				t.Errorf("took %v to refuse a bomb", d)
			}
		})
	}
}

// TestDecodeBombDoesNotAllocate checks that a header claiming 100000×100000
// is refused from the header: well under a megabyte is allocated.
func TestDecodeBombDoesNotAllocate(t *testing.T) {
	for name, data := range map[string][]byte{
		"png":  pngHeader(100000, 100000),
		"jpeg": jpegHeader(60000, 60000),
		"gif":  gifHeader(65535, 65535),
		"webp": webpVP8X(16000, 16000),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := DecodeImage(data, Limits{})
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%s: a bomb decoded", name)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("%s: %d bytes allocated refusing a bomb", name, grew)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0xFF
	return c
}

// pngHeader is a PNG whose IHDR claims w×h, followed by nothing.
func pngHeader(w, h int) []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1)))
	d := b.Bytes()[:33]
	binary.BigEndian.PutUint32(d[16:], uint32(w))
	binary.BigEndian.PutUint32(d[20:], uint32(h))
	// fix the IHDR CRC so only the dimensions are wrong
	binary.BigEndian.PutUint32(d[29:], crc32.ChecksumIEEE(d[12:29]))
	return append(d, 0, 0, 0, 0)
}

// jpegHeader is SOI, a JFIF APP0 and a baseline SOF0 claiming w×h (one
// component), followed by nothing.
func jpegHeader(w, h int) []byte {
	b := []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0}
	return append(b, 0xFF, 0xC0, 0, 11, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 1, 1, 0x11, 0)
}

// jpegScanFlood is a real JPEG with n extra empty scans before its EOI.
func jpegScanFlood(n int) []byte {
	var b bytes.Buffer
	jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 64, 64)), nil)
	d := b.Bytes()
	out := append([]byte(nil), d[:len(d)-2]...)
	for i := 0; i < n; i++ {
		out = append(out, 0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 63, 0)
	}
	return append(out, 0xFF, 0xD9)
}

func gifHeader(w, h int) []byte {
	b := []byte("GIF89a")
	b = append(b, byte(w), byte(w>>8), byte(h), byte(h>>8), 0x80, 0, 0)
	b = append(b, 0, 0, 0, 255, 255, 255)
	return b
}

func webpVP8X(w, h int) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00")
	w--
	h--
	b = append(b, byte(w), byte(w>>8), byte(w>>16), byte(h), byte(h>>8), byte(h>>16))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// TestDecodePaletteAlphaDropsAlpha checks convert("RGB") semantics on a
// picture built here: transparent pixels keep their stored colour.
func TestDecodeAlphaDropped(t *testing.T) {
	m := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	m.SetNRGBA(0, 0, color.NRGBA{10, 20, 30, 0})
	m.SetNRGBA(1, 0, color.NRGBA{200, 100, 50, 128})
	var b bytes.Buffer
	png.Encode(&b, m)
	got, err := DecodeImage(b.Bytes(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Pix, []uint8{10, 20, 30, 200, 100, 50}) {
		t.Errorf("got %v", got.Pix)
	}
}

// FuzzDecodeImage feeds DecodeImage arbitrary bytes: it must return a
// picture of the size it states or an ErrMedia error, never panic, and
// refuse anything over its limits (kept small here so the fuzzer stays
// fast).
func FuzzDecodeImage(f *testing.F) {
	for _, name := range []string{"rgb_1x1.png", "rgb_7x3.png", "rgba_31x17.png", "graya_23x19.png",
		"gray16_45x29.png", "exif8_21x13.png", "exif3_97x61.jpg", "orient6_13x7.jpg", "anim_40x30.gif",
		"lossless_37x23.webp", "lossy_33x21.webp", "pal_333x127.png"} {
		data := readMediaFile(f, name)
		f.Add(data)
		f.Add(data[:len(data)*2/3])
	}
	f.Add(pngHeader(100000, 100000))
	f.Add(jpegHeader(60000, 60000))
	f.Add(gifHeader(65535, 65535))
	f.Add(webpVP8X(16000, 16000))
	lim := Limits{MaxBytes: 1 << 20, MaxPixels: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := DecodeImage(data, lim)
		if err != nil {
			if !errors.Is(err, ErrMedia) {
				t.Fatalf("error %q does not wrap ErrMedia", err)
			}
			return
		}
		if img.Width <= 0 || img.Height <= 0 || img.Width*img.Height > lim.MaxPixels || len(img.Pix) != 3*img.Width*img.Height {
			t.Fatalf("decoded %d×%d with %d bytes", img.Width, img.Height, len(img.Pix))
		}
	})
}
