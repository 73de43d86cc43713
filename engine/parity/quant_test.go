package parity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/checkpoint"
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
			ck, err := checkpoint.Read(q.Path())
			if err != nil {
				t.Fatal(err)
			}
			qc := ck.Quant
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
				vals, rows, cols := sourceWeight(t, src, prefix)
				got, err := weights.Quantize(vals, rows, cols, *qc.For(prefix), tensor.BF16)
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

// sourceWeight is the f32 weight that quantized tensor prefix was made
// from, as rows × cols: the tensor of the same name, or for MLX's stacked
// experts (<block>.switch_mlp.<proj>) the per-expert tensors that
// transformers saves (<block>.experts.<e>.<proj>.weight; Mixtral's w1, w3,
// w2), stacked.
func sourceWeight(t *testing.T, src *weights.Set, prefix string) ([]float32, int, int) {
	names := []string{prefix + ".weight"}
	if block, proj, ok := strings.Cut(prefix, ".switch_mlp."); ok {
		if _, dense := src.Info(block + ".experts.0." + proj + ".weight"); !dense {
			proj = map[string]string{"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"}[proj]
		}
		names = nil
		for e := 0; ; e++ {
			n := fmt.Sprintf("%s.experts.%d.%s.weight", block, e, proj)
			if _, ok := src.Info(n); !ok {
				break
			}
			names = append(names, n)
		}
	}
	var vals []float32
	rows, cols := 0, 0
	for _, n := range names {
		info, ok := src.Info(n)
		if !ok || len(info.Shape) != 2 {
			t.Fatalf("%s: no 2-D f32 source %s", prefix, n)
		}
		raw, _ := src.Bytes(n)
		v := make([]float32, tensor.Elements(info.Shape))
		tensor.Float32(tensor.F32, raw, 0, v)
		vals = append(vals, v...)
		rows, cols = rows+info.Shape[0], info.Shape[1]
	}
	return vals, rows, cols
}
