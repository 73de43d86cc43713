package gguf

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestDequantizeGoldens holds Dequantize to llama.cpp's gguf-py on random
// blocks of every type (tools/oracle/make_gguf_goldens.py): bit for bit.
func TestDequantizeGoldens(t *testing.T) {
	for _, typ := range []GGMLType{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K} {
		t.Run(typ.String(), func(t *testing.T) {
			dir := filepath.Join("testdata", "dequant")
			blocks, err := os.ReadFile(filepath.Join(dir, typ.String()+".blocks"))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, typ.String()+".f32"))
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float32, len(raw)/4)
			for i := range want {
				want[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			got, err := Dequantize(typ, blocks, len(want))
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					if bad < 5 {
						t.Errorf("value %d (block %d): %v, gguf-py %v", i, i/typ.BlockElems(), got[i], want[i])
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d values differ", bad, len(want))
			}
		})
	}
}

func TestDequantizeShort(t *testing.T) {
	if _, err := Dequantize(Q4_K, make([]byte, 143), 256); err == nil {
		t.Error("a short Q4_K block was decoded")
	}
	if _, err := Dequantize(Q8_0, make([]byte, 34), 31); err == nil {
		t.Error("31 values of Q8_0 were decoded")
	}
	if _, err := Dequantize(I32, make([]byte, 4), 1); err == nil {
		t.Error("an I32 tensor was dequantized as a weight")
	}
}
