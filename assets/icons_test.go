package assets

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"testing"
)

func decodePNG(t *testing.T, name string, raw []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return img
}

// TestMenuIcons checks what the menu bar needs: 32×32 pixels (16 points at
// 2×), template images in black and alpha only, and busy variants that
// differ from the idle ones.
func TestMenuIcons(t *testing.T) {
	for _, busy := range []bool{false, true} {
		tmpl, regular := MenuIcon(busy)
		for _, ic := range []struct {
			name     string
			raw      []byte
			template bool
		}{{"template", tmpl, true}, {"regular", regular, false}} {
			img := decodePNG(t, ic.name, ic.raw)
			if b := img.Bounds(); b.Dx() != 32 || b.Dy() != 32 {
				t.Errorf("busy=%v %s icon is %v, want 32×32", busy, ic.name, b)
			}
			opaque := 0
			for y := 0; y < 32; y++ {
				for x := 0; x < 32; x++ {
					c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
					if c.A == 0 {
						continue
					}
					opaque++
					if ic.template && (c.R != 0 || c.G != 0 || c.B != 0) {
						t.Fatalf("busy=%v template pixel (%d,%d) is %v: a template image is black and alpha only", busy, x, y, c)
					}
				}
			}
			if opaque < 32*32/10 {
				t.Errorf("busy=%v %s icon has only %d visible pixels", busy, ic.name, opaque)
			}
		}
	}
	idleT, idleR := MenuIcon(false)
	busyT, busyR := MenuIcon(true)
	if bytes.Equal(idleT, busyT) || bytes.Equal(idleR, busyR) {
		t.Error("the busy icons are the idle ones")
	}
}

// TestAppIcon checks the bundle icon build.sh turns into Hearth.icns.
func TestAppIcon(t *testing.T) {
	raw, err := os.ReadFile("icons/app.png")
	if err != nil {
		t.Fatal(err)
	}
	if b := decodePNG(t, "app.png", raw).Bounds(); b.Dx() != 1024 || b.Dy() != 1024 {
		t.Errorf("app.png is %v, want 1024×1024 (iconutil's largest size)", b)
	}
}
