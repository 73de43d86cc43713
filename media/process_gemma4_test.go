package media

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// loadGemma4Golden reads the Gemma 4 processor goldens that
// tools/oracle/make_gemma4_vision_goldens.py writes beside the media
// goldens (the same format; cases hold the real patch rows only).
func loadGemma4Golden(t *testing.T) *goldenManifest {
	t.Helper()
	dir := filepath.Join(mediaDir, "golden", "gemma4")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m goldenManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	px, err := gunzipFile(filepath.Join(dir, "pixels.f32.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Cases {
		c := &m.Cases[i]
		c.Values = make([]float32, c.Count)
		for j := range c.Values {
			c.Values[j] = math.Float32frombits(binary.LittleEndian.Uint32(px[4*(c.Offset+j):]))
		}
	}
	return &m
}

// TestGemma4ProcessorGolden runs every picture of testdata/media through
// Gemma4ImageProcessor with the class defaults (patch 16, 280 soft tokens)
// and with the tiny test model's settings (patch 2, 70), torchvision and
// PIL backends: the same resize, the real patch rows bit for bit and the
// patch grid.
func TestGemma4ProcessorGolden(t *testing.T) {
	g4 := loadGemma4Golden(t)
	inputs := loadGolden(t)
	exact, total := 0, 0
	worst := 0.0
	for _, c := range g4.Cases {
		t.Run(c.Config+"/"+c.Backend+"/"+c.Image, func(t *testing.T) {
			if c.Error != "" {
				t.Skipf("the reference failed: %s", c.Error)
			}
			p, err := LoadImageProcessor(writeGoldenConfig(t, g4, c.Config, c.Backend))
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Image(goldenInput(t, inputs, c.Image))
			if err != nil {
				t.Fatal(err)
			}
			maxErr, same := compareGolden(t, c, got)
			total++
			if same {
				exact++
			}
			worst = max(worst, maxErr)
		})
	}
	t.Logf("%d cases: max |diff| %.3g; %d bit-identical", total, worst, exact)
	if exact != total {
		t.Errorf("%d of %d cases are not bit-identical to the reference", total-exact, total)
	}
}

func TestGemma4Size(t *testing.T) {
	for _, c := range []struct {
		h, w, patch, soft, pool int
		th, tw                  int
		bad                     bool
	}{
		{48, 48, 2, 70, 3, 48, 48, false},       // already fits: no resize
		{30, 50, 2, 70, 3, 36, 60, false},       // scaled up
		{481, 640, 16, 280, 3, 672, 912, false}, // scaled down
		{1, 1000, 16, 280, 3, 48, 13440, false}, // one side rounds to 0: the long side capped
	} {
		th, tw, err := gemma4Size(c.h, c.w, c.patch, c.soft*c.pool*c.pool, c.pool)
		if (err != nil) != c.bad || th != c.th || tw != c.tw {
			t.Errorf("%d×%d: got %d×%d (%v), want %d×%d", c.w, c.h, tw, th, err, c.tw, c.th)
		}
	}
}
