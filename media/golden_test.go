package media

import (
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The goldens under testdata/media/golden are written by
// tools/oracle/make_media_goldens.py (Pillow 12 and transformers 5.17 on
// the device machine); see that script for what each field means.

var mediaDir = filepath.Join("..", "testdata", "media")

type goldenImage struct {
	File          string `json:"file"`
	Format        string `json:"format"`
	Mode          string `json:"mode"`
	Width         int    `json:"width"`
	Height        int    `json:"height"`
	Orientation   int    `json:"orientation"`
	SHA256        string `json:"sha256"`
	DecodedOffset *int   `json:"decoded_offset"`
	DecodedLen    int    `json:"decoded_len"`
	Error         string `json:"error"`
}

type goldenCase struct {
	Image   string    `json:"image"`
	Config  string    `json:"config"`
	Backend string    `json:"backend"`
	Kind    string    `json:"kind"`
	Frames  int       `json:"frames"`
	Shape   []int     `json:"shape"`
	Grid    []int     `json:"grid"`
	N       int       `json:"n"`
	Stride  int       `json:"stride"`
	Offset  int       `json:"offset"`
	Count   int       `json:"count"`
	Sum     float64   `json:"sum"`
	WSum    float64   `json:"wsum"`
	SHA256  string    `json:"sha256"`
	Error   string    `json:"error"`
	Values  []float32 `json:"-"`
}

type goldenConfig struct {
	Preprocessor json.RawMessage `json:"preprocessor_config"`
	Video        json.RawMessage `json:"video_preprocessor_config"`
	Class        string          `json:"class"`
	PilClass     string          `json:"pil_class"`
}

type goldenManifest struct {
	Versions   map[string]string       `json:"versions"`
	CPU        string                  `json:"cpu_capability"`
	NativeU8   any                     `json:"native_uint8_bilinear"`
	Images     []goldenImage           `json:"images"`
	Configs    map[string]goldenConfig `json:"configs"`
	Cases      []goldenCase            `json:"cases"`
	decoded    []byte
	byFileName map[string]goldenImage
}

var (
	goldenOnce sync.Once
	golden     *goldenManifest
	goldenErr  error
)

func gunzipFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(z)
}

func loadGolden(t testing.TB) *goldenManifest {
	t.Helper()
	goldenOnce.Do(func() {
		dir := filepath.Join(mediaDir, "golden")
		raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		if err != nil {
			goldenErr = err
			return
		}
		var m goldenManifest
		if goldenErr = json.Unmarshal(raw, &m); goldenErr != nil {
			return
		}
		if m.decoded, goldenErr = gunzipFile(filepath.Join(dir, "decoded.u8.gz")); goldenErr != nil {
			return
		}
		px, err := gunzipFile(filepath.Join(dir, "pixels.f32.gz"))
		if err != nil {
			goldenErr = err
			return
		}
		for i := range m.Cases {
			c := &m.Cases[i]
			if c.Error != "" {
				continue
			}
			c.Values = make([]float32, c.Count)
			for j := range c.Values {
				o := 4 * (c.Offset + j)
				c.Values[j] = math.Float32frombits(binary.LittleEndian.Uint32(px[o:]))
			}
		}
		m.byFileName = map[string]goldenImage{}
		for _, im := range m.Images {
			m.byFileName[im.File] = im
		}
		golden = &m
	})
	if goldenErr != nil {
		t.Fatalf("goldens: %v", goldenErr)
	}
	return golden
}

// decodedRGB is the stored Pillow RGB of a picture, or nil where only its
// hash is stored.
func (m *goldenManifest) decodedRGB(file string) []byte {
	im := m.byFileName[file]
	if im.DecodedOffset == nil {
		return nil
	}
	return m.decoded[*im.DecodedOffset : *im.DecodedOffset+im.DecodedLen]
}

func readMediaFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(mediaDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lossy reports whether our decoder is not expected to match Pillow's
// bit for bit: JPEG, whose IDCT is not libjpeg-turbo's (lossy WebP is
// matched exactly).
func lossy(file string) bool {
	return filepath.Ext(file) == ".jpg"
}
