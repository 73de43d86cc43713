package gguf

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"hearth/engine/tensor"
)

// TestAffineExact converts the golden blocks of each type with an affine
// form (groups of 32, or of 16 for Q2_K, Q3_K and Q6_K), as one row and as
// several, and decodes them back through
// the weight decoder the kernels are held to: every value must equal
// gguf-py's (as a number: where a code is the zero point and the scale is
// negative, gguf-py's (q-8)·d is -0 and code·d + bias is +0).
func TestAffineExact(t *testing.T) {
	for typ, q := range affineQuant {
		t.Run(typ.String(), func(t *testing.T) {
			blk, err := os.ReadFile(filepath.Join("testdata", "dequant", typ.String()+".blocks"))
			if err != nil {
				t.Fatal(err)
			}
			n := len(blk) / typ.BlockBytes() * typ.BlockElems()
			want, err := Dequantize(typ, blk, n)
			if err != nil {
				t.Fatal(err)
			}
			shapes := [][2]int{{1, n}}
			if nb := len(blk) / typ.BlockBytes(); nb%2 == 0 || typ.BlockElems() == 32 {
				shapes = append(shapes, [2]int{n / typ.BlockElems(), typ.BlockElems()})
			}
			for _, sh := range shapes {
				rows, cols := sh[0], sh[1]
				w, err := Affine(typ, blk, rows, cols)
				if err != nil {
					t.Fatal(err)
				}
				if *w.Quant != q {
					t.Errorf("%v: quant %+v", sh, *w.Quant)
				}
				legacy := typ.BlockElems() == 32
				if legacy != (w.ScaleDType == tensor.F16) {
					t.Errorf("%v: scales in %s", sh, w.ScaleDType)
				}
				row := make([]float32, cols)
				for r := range rows {
					w.DecodeRow(r, row)
					for c, v := range row {
						if v != want[r*cols+c] || math.IsNaN(float64(v)) {
							t.Fatalf("%v: [%d %d] decodes to %v, gguf-py %v", sh, r, c, v, want[r*cols+c])
						}
					}
				}
			}
		})
	}
}

func TestAffineRefuses(t *testing.T) {
	for _, typ := range []GGMLType{Q8_K, Q8_1, F16, F32} {
		if _, err := Affine(typ, make([]byte, typ.BlockBytes()), 1, typ.BlockElems()); err == nil {
			t.Errorf("%s converted", typ)
		}
	}
	if _, err := Affine(Q8_0, make([]byte, 33), 1, 32); err == nil {
		t.Error("a short Q8_0 row converted")
	}
}

// TestAffineExactRandom holds the conversion to Dequantize on many random
// blocks of each type (every scale, level and sign pattern the goldens'
// few blocks may miss), in 4 rows of 8 blocks: decoded, every value is
// Dequantize's. A block whose values are not all finite (a NaN or
// infinite half scale) is drawn again.
func TestAffineExactRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 16))
	for typ, q := range affineQuant {
		t.Run(typ.String(), func(t *testing.T) {
			const rows, per = 4, 8
			bb, be := typ.BlockBytes(), typ.BlockElems()
			data := make([]byte, rows*per*bb)
			for b := range rows * per {
				blk := data[b*bb : (b+1)*bb]
				for {
					for i := range blk {
						blk[i] = byte(rng.Uint32())
					}
					v, err := Dequantize(typ, blk, be)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.ContainsFunc(v, func(x float32) bool { return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) }) {
						break
					}
				}
			}
			cols := per * be
			want, err := Dequantize(typ, data, rows*cols)
			if err != nil {
				t.Fatal(err)
			}
			w, err := Affine(typ, data, rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			if *w.Quant != q {
				t.Fatalf("quant %+v, want %+v", *w.Quant, q)
			}
			row := make([]float32, cols)
			for r := range rows {
				w.DecodeRow(r, row)
				for c, v := range row {
					if v != want[r*cols+c] {
						t.Fatalf("[%d %d] decodes to %v, Dequantize %v", r, c, v, want[r*cols+c])
					}
				}
			}
		})
	}
}
