package parity

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/config"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/internal/testmodels"
)

// TestQuantizerMatchesOracle re-quantizes each f32 oracle model with
// Hearth's own quantizer and compares, byte for byte, with the oracle's
// MLX-scheme checkpoint made from the same float32 weights (same seed).
func TestQuantizerMatchesOracle(t *testing.T) {
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	seedOf := func(e testmodels.Entry) int {
		raw, err := os.ReadFile(filepath.Join(e.Path(), "golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		var g struct{ Seed int }
		if err := json.Unmarshal(raw, &g); err != nil {
			t.Fatal(err)
		}
		return g.Seed
	}
	compared := 0
	for _, q := range m.Entries {
		if q.Variant != "q4g64" && q.Variant != "q8g32" {
			continue
		}
		f, ok := m.Find(q.ModelType + "-f32")
		if !ok || seedOf(f) != seedOf(q) {
			continue // the oracle re-drew weights for this variant
		}
		t.Run(q.Name, func(t *testing.T) {
			cfg, err := config.Load(q.Path())
			if err != nil {
				t.Fatal(err)
			}
			qc, err := weights.ParseQuantConfig(cfg.Quantization)
			if err != nil {
				t.Fatal(err)
			}
			src, err := weights.Open(f.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			dst, err := weights.Open(q.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			n := 0
			for _, name := range dst.Names() {
				prefix, ok := strings.CutSuffix(name, ".scales")
				if !ok {
					continue
				}
				info, _ := src.Info(prefix + ".weight")
				raw, _ := src.Bytes(prefix + ".weight")
				vals := make([]float32, tensor.Elements(info.Shape))
				tensor.Float32(tensor.F32, raw, 0, vals)
				got, err := weights.Quantize(vals, info.Shape[0], info.Shape[1], *qc.For(prefix), tensor.BF16)
				if err != nil {
					t.Fatalf("%s: %v", prefix, err)
				}
				for _, part := range []struct {
					suffix string
					got    []byte
				}{{".weight", got.Data}, {".scales", got.Scales}, {".biases", got.Biases}} {
					want, _ := dst.Bytes(prefix + part.suffix)
					if !bytes.Equal(part.got, want) {
						t.Errorf("%s%s: Hearth's quantizer differs from the oracle's", prefix, part.suffix)
					}
				}
				n++
			}
			if n == 0 {
				t.Fatal("no quantized tensors compared")
			}
			compared++
		})
	}
	if compared < 4 {
		t.Errorf("only %d quantized entries share a seed with their f32 entry", compared)
	}
}
