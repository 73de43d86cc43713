// Tests of the header parser on hand-built bytes: one good file checked field
// by field, and a table of hostile ones.

package weights

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hearth/engine/tensor"
)

// rawFile builds safetensors bytes from a literal header and data section.
func rawFile(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func TestReadHeaderHandBuilt(t *testing.T) {
	header := `{"__metadata__":{"format":"pt"},` +
		`"b":{"dtype":"F16","shape":[2],"data_offsets":[8,12]},` +
		`"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"z":{"dtype":"I64","shape":[0,3],"data_offsets":[12,12]}}`
	for len(header)%8 != 0 {
		header += " "
	}
	data := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5))
	data = binary.LittleEndian.AppendUint32(data, math.Float32bits(-2))
	data = binary.LittleEndian.AppendUint16(data, 0x3c00) // 1.0
	data = binary.LittleEndian.AppendUint16(data, 0x3800) // 0.5
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), rawFile(header, data), 0o644); err != nil {
		t.Fatal(err)
	}

	infos, meta, err := ReadHeader(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	start := int64(8 + len(header))
	want := []Info{
		{Name: "a", DType: tensor.F32, Shape: []int{2}, File: "model.safetensors", Offset: start, Length: 8},
		{Name: "b", DType: tensor.F16, Shape: []int{2}, File: "model.safetensors", Offset: start + 8, Length: 4},
		{Name: "z", DType: tensor.I64, Shape: []int{0, 3}, File: "model.safetensors", Offset: start + 12, Length: 0},
	}
	if !reflect.DeepEqual(infos, want) {
		t.Errorf("ReadHeader infos = %+v, want %+v", infos, want)
	}
	if !reflect.DeepEqual(meta, map[string]string{"format": "pt"}) {
		t.Errorf("ReadHeader metadata = %v, want format=pt", meta)
	}

	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tt := range []struct {
		name string
		want []float32
	}{{"a", []float32{1.5, -2}}, {"b", []float32{1, 0.5}}} {
		b, ok := s.Bytes(tt.name)
		in, _ := s.Info(tt.name)
		if !ok {
			t.Fatalf("Bytes(%q) missing", tt.name)
		}
		got := make([]float32, 2)
		tensor.Float32(in.DType, b, 0, got)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("tensor %q = %v, want %v", tt.name, got, tt.want)
		}
	}
	if b, ok := s.Bytes("z"); !ok || len(b) != 0 {
		t.Errorf("Bytes(z) = %v, %v; want empty, true", b, ok)
	}
}

func TestReadHeaderErrors(t *testing.T) {
	f32x2 := make([]byte, 8)
	tests := []struct {
		name string
		file []byte
		want string // substring of the error
	}{
		{"empty file", nil, "file has 0 bytes, too few for a safetensors header"},
		{"short file", []byte{1, 2, 3}, "too few for a safetensors header"},
		{"header over limit", binary.LittleEndian.AppendUint64(nil, 200<<20), "over the 104857600-byte limit"},
		{"header past end", binary.LittleEndian.AppendUint64(nil, 100), "header length 100 runs past the end of the file (8 bytes; incomplete download?)"},
		{"bad json", rawFile(`{"a":{"dtype":`, nil), "header is not JSON"},
		{"not an object", rawFile(`[1,2]   `, nil), "header is not a JSON object"},
		{"trailing bytes", rawFile(`{}x`, nil), "header has bytes after its JSON object"},
		{"two objects", rawFile(`{}{}`, nil), "header has bytes after its JSON object"},
		{"unsupported dtype", rawFile(`{"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 2)),
			`tensor "w" has dtype "F8_E4M3", which Hearth does not read (supported: F32, F16, BF16, U32, I32, I64, U8, I8, F64, BOOL)`},
		{"offsets lie about size", rawFile(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, f32x2),
			`tensor "x": F32 [2] needs 8 bytes, data_offsets [0, 4] hold 4`},
		{"truncated", rawFile(`{"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, f32x2),
			`tensor "x" ends at byte 79, file has 71 (incomplete download?)`},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, make([]byte, 12)),
			`tensors "a" and "b" overlap`},
		{"begin after end", rawFile(`{"x":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}}`, f32x2), "are not a byte range"},
		{"negative offset", rawFile(`{"x":{"dtype":"F32","shape":[0],"data_offsets":[-4,-4]}}`, f32x2), "are not a byte range"},
		{"negative dim", rawFile(`{"x":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,8]}}`, f32x2), "invalid dimension -1"},
		{"shape overflow", rawFile(`{"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}`, f32x2), "is too large"},
		{"bytes overflow", rawFile(`{"x":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,8]}}`, f32x2), "is too large"},
		{"fractional dim", rawFile(`{"x":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}`, f32x2), `tensor "x": json: cannot unmarshal`},
		{"duplicate tensor", rawFile(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, f32x2), `lists tensor "x" twice`},
		{"metadata not strings", rawFile(`{"__metadata__":{"a":1}}`, nil), "__metadata__ is not an object of strings"},
		{"no dtype", rawFile(`{"x":{"shape":[1],"data_offsets":[0,1]}}`, f32x2), `tensor "x" has no dtype`},
		{"no shape", rawFile(`{"x":{"dtype":"U8","data_offsets":[0,1]}}`, f32x2), `tensor "x" has no shape`},
		{"three offsets", rawFile(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`, f32x2), "data_offsets has 3 values, want 2"},
		{"empty name", rawFile(`{"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, f32x2), "empty name"},
		{"entry not object", rawFile(`{"x":7}`, nil), `tensor "x": json: cannot unmarshal`},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("case%d.safetensors", i))
			if err := os.WriteFile(path, tt.file, 0o644); err != nil {
				t.Fatal(err)
			}
			infos, _, err := ReadHeader(path)
			if err == nil {
				t.Fatalf("ReadHeader = %v, nil; want error containing %q", infos, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadHeader error = %q, want it to contain %q", err, tt.want)
			}
			if prefix := filepath.Base(path) + ": "; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("ReadHeader error = %q, want it to start with the file name %q", err, prefix)
			}
		})
	}
}

func TestReadHeaderGapsAllowed(t *testing.T) {
	// Offsets need not be contiguous: a gap and trailing bytes are tolerated.
	file := rawFile(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}}`, make([]byte, 10))
	infos, _, err := parseHeader(bytesReader(file), int64(len(file)), "f")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := infos[0].Offset, int64(len(file)-10+4); got != want {
		t.Errorf("Offset = %d, want %d", got, want)
	}
}

func TestReadHeaderMissingFile(t *testing.T) {
	_, _, err := ReadHeader(filepath.Join(t.TempDir(), "absent.safetensors"))
	if !os.IsNotExist(err) {
		t.Errorf("ReadHeader(absent) error = %v, want a not-exist error", err)
	}
}
