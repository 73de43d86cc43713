// Tests of Open and the mapped Set: a Write→Open round trip for every dtype,
// zero-length tensors, and behaviour after Close.

package weights

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"hearth/engine/tensor"
)

func TestWriteOpenRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	shapes := [][]int{{3, 5}, {7}, {}, {0, 4}, {2, 3, 2}}
	var ws []tensor.Weight
	for d := tensor.F32; d <= tensor.Bool; d++ {
		for i, shape := range shapes {
			data := make([]byte, tensor.Elements(shape)*d.Size())
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			ws = append(ws, tensor.Weight{Name: d.String() + "." + string(rune('a'+i)), DType: d, Shape: shape, Data: data})
		}
	}
	dir := t.TempDir()
	meta := map[string]string{"format": "mlx", "note": "<&>"}
	if err := Write(filepath.Join(dir, "model.safetensors"), ws, meta); err != nil {
		t.Fatal(err)
	}

	infos, gotMeta, err := ReadHeader(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotMeta, meta) {
		t.Errorf("metadata = %v, want %v", gotMeta, meta)
	}
	if start := infos[0].Offset; start%8 != 0 {
		t.Errorf("data starts at byte %d, want a multiple of 8", start)
	}
	for i := 1; i < len(infos); i++ { // laid out in name order, back to back
		if infos[i].Offset != infos[i-1].Offset+infos[i-1].Length {
			t.Errorf("tensor %q at %d, want %d (right after %q)", infos[i].Name, infos[i].Offset, infos[i-1].Offset+infos[i-1].Length, infos[i-1].Name)
		}
	}

	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Names()) != len(ws) {
		t.Fatalf("Open found %d tensors, want %d", len(s.Names()), len(ws))
	}
	for _, w := range ws {
		t.Run(w.Name, func(t *testing.T) {
			in, ok := s.Info(w.Name)
			if !ok {
				t.Fatalf("Info(%q) missing", w.Name)
			}
			if in.DType != w.DType || !slices.Equal(in.Shape, w.Shape) {
				t.Errorf("Info = %v %v, want %v %v", in.DType, in.Shape, w.DType, w.Shape)
			}
			b, ok := s.Bytes(w.Name)
			if !ok || !bytes.Equal(b, w.Data) {
				t.Errorf("Bytes(%q) = %x, want %x", w.Name, b, w.Data)
			}
		})
	}
}

func TestSetClose(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "model.safetensors", f32("x", []int{2}, 1, 2))
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Bytes("nope"); ok {
		t.Error("Bytes(nope) reported true")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, ok := s.Bytes("x"); ok {
		t.Error("Bytes after Close reported true")
	}
	if _, ok := s.Info("x"); !ok {
		t.Error("Info after Close reported false; headers stay readable")
	}
}

func TestOpenNoTensors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "model.safetensors")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := len(s.Names()); n != 0 {
		t.Errorf("Names has %d entries, want 0", n)
	}
	if err := NewBinder(s, QuantConfig{}).Audit(nil); err != nil {
		t.Errorf("Audit of an empty checkpoint = %v, want nil", err)
	}
}

func TestWriteErrors(t *testing.T) {
	q4 := &tensor.Quant{Bits: 4, GroupSize: 32}
	tests := []struct {
		name string
		ws   []tensor.Weight
		want string
	}{
		{"no name", []tensor.Weight{f32("", []int{1}, 1)}, "a weight has no name"},
		{"short buffer", []tensor.Weight{{Name: "x", DType: tensor.F32, Shape: []int{3}, Data: make([]byte, 8)}}, `write "x": F32 [3] needs 12 bytes, the buffer has 8`},
		{"bad dtype", []tensor.Weight{{Name: "x", DType: 0, Shape: []int{1}, Data: make([]byte, 1)}}, "unknown dtype"},
		{"negative shape", []tensor.Weight{{Name: "x", DType: tensor.U8, Shape: []int{-1}}}, "invalid shape"},
		{"duplicate", []tensor.Weight{f32("x", []int{1}, 1), f32("x", []int{1}, 2)}, `tensor "x" appears twice`},
		{"quantized clashes with dense", []tensor.Weight{
			f32("p.weight", []int{1}, 1),
			{Name: "p", DType: tensor.U32, Shape: []int{1, 32}, Data: make([]byte, 16), Quant: q4, Scales: make([]byte, 4), Biases: make([]byte, 4), ScaleDType: tensor.F32},
		}, `tensor "p.weight" appears twice`},
		{"reserved name", []tensor.Weight{f32("__metadata__", []int{1}, 1)}, "is reserved"},
		{"quantized short scales", []tensor.Weight{{Name: "p", DType: tensor.U32, Shape: []int{1, 32}, Data: make([]byte, 16), Quant: q4, Scales: make([]byte, 2), Biases: make([]byte, 4), ScaleDType: tensor.F32}}, `write "p.scales"`},
		{"quantized bad group", []tensor.Weight{{Name: "p", DType: tensor.U32, Shape: []int{1, 48}, Quant: q4, ScaleDType: tensor.F32}}, "does not fit group size 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "model.safetensors")
			err := Write(path, tt.ws, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Write error = %v, want it to contain %q", err, tt.want)
			}
			if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*")); len(matches) != 0 {
				t.Errorf("Write left files behind: %v", matches)
			}
		})
	}
}

// TestSetAlloc: memory for assembled weights is zeroed, writable, lives
// until Close and is refused after it.
func TestSetAlloc(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "model.safetensors", f32("x", []int{2}, 1, 2))
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3<<20 + 5 // several pages, not a multiple of one
	b, err := s.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != n || b[0] != 0 || b[n-1] != 0 {
		t.Fatalf("Alloc(%d) = %d bytes, ends %d %d", n, len(b), b[0], b[n-1])
	}
	b[0], b[n-1] = 1, 2
	if empty, err := s.Alloc(0); err != nil || len(empty) != 0 {
		t.Errorf("Alloc(0) = %d bytes, %v", len(empty), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Alloc(1); err == nil {
		t.Error("Alloc after Close succeeded")
	}
}
