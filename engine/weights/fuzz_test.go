// Fuzz targets for the two parsers of outside input: the safetensors header
// and config.json's quantization object. Corpus entries that once broke a
// parser live in testdata/fuzz/.

package weights

import (
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"hearth/engine/tensor"
)

func FuzzHeader(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.safetensors")
	ws := []tensor.Weight{
		f32("a", []int{2, 2}, 1, 2, 3, 4),
		{Name: "b", DType: tensor.BF16, Shape: []int{3}, Data: make([]byte, 6)},
		{Name: "z", DType: tensor.I64, Shape: []int{0}, Data: nil},
	}
	if err := Write(path, ws, map[string]string{"format": "pt"}); err != nil {
		f.Fatal(err)
	}
	seed, err := readSmall(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(rawFile(`{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, make([]byte, 8)))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}}`, make([]byte, 8)))
	f.Add(rawFile(`{"x":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 1)))
	f.Add(rawFile(`{"x":{"dtype":"F64","shape":[2305843009213693952,8],"data_offsets":[0,0]}}`, nil))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		infos, _, err := parseHeader(bytesReader(b), int64(len(b)), "fuzz.safetensors")
		if err != nil {
			return
		}
		// A header that parses describes tensors that lie inside the file,
		// fit their shapes exactly and do not overlap.
		dataStart := 8 + int64(binary.LittleEndian.Uint64(b)) // parsed, so len(b) ≥ 8 and the length is sane
		for i, in := range infos {
			if i > 0 && infos[i-1].Name >= in.Name {
				t.Fatalf("infos not sorted and unique: %q then %q", infos[i-1].Name, in.Name)
			}
			elems, ok := elementsChecked(in.Shape)
			if !ok || elems*int64(in.DType.Size()) != in.Length || in.DType.Size() == 0 {
				t.Fatalf("tensor %q: %v %v does not fit %d bytes", in.Name, in.DType, in.Shape, in.Length)
			}
			if in.Offset < dataStart || in.Length < 0 || in.Offset+in.Length > int64(len(b)) {
				t.Fatalf("tensor %q at [%d, %d) is outside the data section [%d, %d)", in.Name, in.Offset, in.Offset+in.Length, dataStart, len(b))
			}
			_ = b[in.Offset : in.Offset+in.Length]
		}
		if err := checkOverlaps(infos); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseQuantConfig(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `{"group_size": 64, "bits": 4}`,
		`{"group_size": 64, "bits": 4, "mode": "affine", "model.embed_tokens": {"group_size": 32, "bits": 8}, "lm_head": false, "x": true}`,
		`{"bits": 7, "group_size": 64}`, `{"a": {"bits": 4}}`, `{"quant_method": "awq"}`, `[1]`, `{"bits": 1e400}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := ParseQuantConfig(json.RawMessage(b))
		if err != nil {
			return
		}
		valid := func(v *tensor.Quant) bool {
			return v == nil || slices.Contains(validBits, v.Bits) && slices.Contains(validGroups, v.GroupSize)
		}
		if !valid(q.Default) {
			t.Fatalf("default %+v is not a valid quantization", *q.Default)
		}
		for k, v := range q.PerPath {
			if !valid(v) {
				t.Fatalf("%q: %+v is not a valid quantization", k, *v)
			}
			if got := q.For(k); (got == nil) != (v == nil) || got != nil && *got != *v {
				t.Fatalf("For(%q) = %v, want %v", k, got, v)
			}
		}
	})
}

// FuzzBinder binds every tensor of a fuzzed file, dense or quantized, and
// dequantizes what the Binder accepts: nothing it hands out may panic.
func FuzzBinder(f *testing.F) {
	dir := f.TempDir()
	w := make([]float32, 4*128)
	for i := range w {
		w[i] = float32(i%17) - 8
	}
	for _, q := range []tensor.Quant{{Bits: 4, GroupSize: 64}, {Bits: 3, GroupSize: 32}, {Bits: 8, GroupSize: 128}} {
		qw, err := Quantize(w, 4, 128, q, tensor.F16)
		if err != nil {
			f.Fatal(err)
		}
		qw.Name = "model.layers.0.mlp.up_proj"
		path := filepath.Join(dir, "seed.safetensors")
		if err := Write(path, []tensor.Weight{qw, f32("model.norm.weight", []int{2}, 1, 2)}, nil); err != nil {
			f.Fatal(err)
		}
		seed, err := readSmall(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, b []byte, useConfig bool) {
		s := &Set{files: []string{"fuzz.safetensors"}, maps: [][]byte{b}}
		if err := s.index(layout{files: s.files}); err != nil {
			return
		}
		var q QuantConfig
		if useConfig {
			q.Default = &tensor.Quant{Bits: 4, GroupSize: 64}
		}
		bd := NewBinder(s, q)
		for _, name := range s.Names() {
			prefix, kind := splitQuantName(name)
			if kind != "weight" {
				bd.Tensor(name)
				continue
			}
			lw := bd.Linear(prefix)
			if lw.Data == nil || len(lw.Shape) == 0 || !isFloat(lw.DType) && !lw.Quantized() {
				continue
			}
			cols := lw.Shape[len(lw.Shape)-1]
			rows := tensor.Elements(lw.Shape[:len(lw.Shape)-1])
			if cols > 1<<12 || rows > 64 {
				continue
			}
			dst := make([]float32, cols)
			for r := range rows {
				lw.DecodeRow(r, dst)
			}
		}
		_ = bd.Audit([]string{"*.inv_freq"})
	})
}
