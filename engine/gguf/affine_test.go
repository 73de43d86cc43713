package gguf

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"hearth/engine/tensor"
)

// TestAffineExact converts the golden blocks of each type with a 32-value
// group form, as one row and as several, and decodes them back through
// the weight decoder the kernels are held to: every value must equal
// gguf-py's (as a number: where a code is the zero point and the scale is
// negative, gguf-py's (q-8)·d is -0 and code·d + bias is +0).
func TestAffineExact(t *testing.T) {
	for typ, bits := range affineBits {
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
				if w.Quant.Bits != bits || w.Quant.GroupSize != 32 {
					t.Errorf("%v: quant %+v", sh, *w.Quant)
				}
				legacy := typ != Q4_K && typ != Q5_K
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
	for _, typ := range []GGMLType{Q6_K, Q2_K, Q3_K, F16} {
		if _, err := Affine(typ, make([]byte, typ.BlockBytes()), 1, typ.BlockElems()); err == nil {
			t.Errorf("%s converted", typ)
		}
	}
	if _, err := Affine(Q8_0, make([]byte, 33), 1, 32); err == nil {
		t.Error("a short Q8_0 row converted")
	}
}
