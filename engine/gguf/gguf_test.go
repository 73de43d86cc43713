package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sampleKV has a value of every type, arrays included.
func sampleKV() []KV {
	return []KV{
		{"general.architecture", Value{Type: TypeString, V: "llama"}},
		{"general.alignment", Value{Type: TypeUint32, V: uint64(64)}},
		{"u8", Value{Type: TypeUint8, V: uint64(200)}},
		{"i8", Value{Type: TypeInt8, V: int64(-5)}},
		{"u16", Value{Type: TypeUint16, V: uint64(60000)}},
		{"i16", Value{Type: TypeInt16, V: int64(-30000)}},
		{"llama.block_count", Value{Type: TypeUint32, V: uint64(2)}},
		{"i32", Value{Type: TypeInt32, V: int64(-7)}},
		{"llama.rope.freq_base", Value{Type: TypeFloat32, V: float64(10000)}},
		{"b", Value{Type: TypeBool, V: true}},
		{"u64", Value{Type: TypeUint64, V: uint64(1) << 40}},
		{"i64", Value{Type: TypeInt64, V: int64(-1) << 40}},
		{"f64", Value{Type: TypeFloat64, V: 0.1}},
		{"tokenizer.ggml.tokens", Value{Type: TypeArray, Elem: TypeString, V: []string{"<s>", "a", "▁b", ""}}},
		{"tokenizer.ggml.scores", Value{Type: TypeArray, Elem: TypeFloat32, V: []float64{0, -1.5, -2.25, 0}}},
		{"tokenizer.ggml.token_type", Value{Type: TypeArray, Elem: TypeInt32, V: []int64{3, 1, 1, 1}}},
		{"bools", Value{Type: TypeArray, Elem: TypeBool, V: []bool{true, false}}},
		{"u32s", Value{Type: TypeArray, Elem: TypeUint32, V: []uint64{1, 2}}},
		{"nested", Value{Type: TypeArray, Elem: TypeArray, V: []Value{{Type: TypeArray, Elem: TypeString, V: []string{"x"}}}}},
	}
}

func sampleTensors() []WriteTensor {
	f32 := make([]byte, 4*8*3)
	for i := range f32 {
		f32[i] = byte(i)
	}
	return []WriteTensor{
		{Name: "token_embd.weight", Dims: []uint64{8, 3}, Type: F32, Data: f32},
		{Name: "blk.0.attn_q.weight", Dims: []uint64{64, 2}, Type: Q8_0, Data: bytes.Repeat([]byte{1}, 2*2*34)},
		{Name: "blk.0.ffn_down.weight", Dims: []uint64{256, 1}, Type: Q4_K, Data: bytes.Repeat([]byte{2}, 144)},
		{Name: "output_norm.weight", Dims: []uint64{8}, Type: BF16, Data: make([]byte, 16)},
	}
}

func writeSample(t testing.TB, kv []KV, ts []WriteTensor) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, kv, ts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	kv, ts := sampleKV(), sampleTensors()
	b := writeSample(t, kv, ts)
	f, err := Parse(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Alignment != 64 || f.DataStart%64 != 0 {
		t.Errorf("version %d, alignment %d, data at %d", f.Version, f.Alignment, f.DataStart)
	}
	if !reflect.DeepEqual(f.KV, kv) {
		t.Errorf("metadata:\n got %+v\nwant %+v", f.KV, kv)
	}
	if s, ok := f.String("general.architecture"); !ok || s != "llama" {
		t.Errorf("architecture %q %v", s, ok)
	}
	if n, ok := f.Uint("llama.block_count"); !ok || n != 2 {
		t.Errorf("block_count %d %v", n, ok)
	}
	if x, ok := f.Float("llama.rope.freq_base"); !ok || x != 10000 {
		t.Errorf("freq_base %v %v", x, ok)
	}
	if len(f.Tensors) != len(ts) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(ts))
	}
	for i, w := range ts {
		got := f.Tensors[i]
		if got.Name != w.Name || !reflect.DeepEqual(got.Dims, w.Dims) || got.Type != w.Type || got.Size != int64(len(w.Data)) {
			t.Errorf("tensor %d: %+v, want %s %v %s %d bytes", i, got, w.Name, w.Dims, w.Type, len(w.Data))
		}
		if !bytes.Equal(b[got.Offset:got.Offset+got.Size], w.Data) {
			t.Errorf("tensor %s: the index points at other bytes", w.Name)
		}
		if got.Offset%64 != 0 {
			t.Errorf("tensor %s at %d, not aligned", w.Name, got.Offset)
		}
	}
}

// TestTruncated cuts a valid file at every length: each prefix short of
// the last tensor's end is an error that wraps ErrFormat, never a panic
// or a success (the padding after the last tensor is optional).
func TestTruncated(t *testing.T) {
	b := writeSample(t, sampleKV(), sampleTensors())
	f, err := Parse(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	last := f.Tensors[len(f.Tensors)-1]
	end := int(last.Offset + last.Size)
	if _, err := Parse(bytes.NewReader(b[:end]), int64(end)); err != nil {
		t.Errorf("without its trailing padding: %v", err)
	}
	for n := 0; n < end; n++ {
		_, err := Parse(bytes.NewReader(b[:n]), int64(n))
		if err == nil {
			t.Fatalf("a file cut at %d of %d bytes parsed", n, len(b))
		}
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("cut at %d: %v does not wrap ErrFormat", n, err)
		}
	}
}

// header builds a file byte by byte for the malformed cases.
type header struct{ bytes.Buffer }

func (h *header) u32(v uint32) *header { binary.Write(h, binary.LittleEndian, v); return h }
func (h *header) u64(v uint64) *header { binary.Write(h, binary.LittleEndian, v); return h }
func (h *header) str(s string) *header { h.u64(uint64(len(s))); h.WriteString(s); return h }
func start(tensors, kvs uint64) *header {
	h := &header{}
	h.WriteString("GGUF")
	return h.u32(3).u64(tensors).u64(kvs)
}

func TestMalformed(t *testing.T) {
	tensor := func(h *header, name string, dims []uint64, typ uint32, off uint64) *header {
		h.str(name).u32(uint32(len(dims)))
		for _, d := range dims {
			h.u64(d)
		}
		return h.u32(typ).u64(off)
	}
	withData := func(h *header, n int) []byte {
		for h.Len()%32 != 0 {
			h.WriteByte(0)
		}
		h.Write(make([]byte, n))
		return h.Bytes()
	}
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"magic", []byte("GGML\x03\x00\x00\x00" + strings.Repeat("\x00", 16)), "magic"},
		{"version 1", func() []byte { h := &header{}; h.WriteString("GGUF"); return h.u32(1).u64(0).u64(0).Bytes() }(), "version: 1"},
		{"tensor count", start(1<<40, 0).Bytes(), "tensor_count"},
		{"key count", start(0, 1<<40).Bytes(), "metadata_kv_count"},
		{"string length", start(0, 1).str("k").u32(uint32(TypeString)).u64(1 << 40).Bytes(), "length"},
		{"value type", start(0, 1).str("k").u32(99).Bytes(), "unknown value type 99"},
		{"array length", start(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint8)).u64(1 << 30).Bytes(), "array length"},
		{"array type", start(0, 1).str("k").u32(uint32(TypeArray)).u32(77).u64(1).Bytes(), "unknown type 77"},
		{"bool", func() []byte { h := start(0, 1).str("k").u32(uint32(TypeBool)); h.WriteByte(2); return h.Bytes() }(), "bool byte 2"},
		{"alignment", func() []byte {
			h := start(0, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(24)
			return h.Bytes()
		}(), "general.alignment"},
		{"n_dims", withData(tensor(start(1, 0), "w", []uint64{1, 1, 1, 1, 1}, 0, 0), 4), "n_dims 5"},
		{"zero dim", withData(tensor(start(1, 0), "w", []uint64{0}, 0, 0), 4), "dim 0 is 0"},
		{"dim overflow", withData(tensor(start(1, 0), "w", []uint64{1 << 40, 1 << 40}, 0, 0), 4), "63 bits"},
		{"type", withData(tensor(start(1, 0), "w", []uint64{4}, 99, 0), 16), "ggml type 99"},
		{"partial block", withData(tensor(start(1, 0), "w", []uint64{48}, uint32(Q8_0), 0), 64), "not a whole number of Q8_0 blocks"},
		{"misaligned", withData(tensor(start(1, 0), "w", []uint64{1}, 0, 4), 64), "not a multiple of the alignment"},
		{"past the end", withData(tensor(start(1, 0), "w", []uint64{64}, 0, 0), 100), "run past its end"},
		{"overlap", withData(tensor(tensor(start(2, 0), "a", []uint64{16}, 0, 0), "b", []uint64{16}, 0, 32), 128), "overlap"},
		{"tensor twice", withData(tensor(tensor(start(2, 0), "a", []uint64{8}, 0, 0), "a", []uint64{8}, 0, 32), 64), "appears twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(bytes.NewReader(c.file), int64(len(c.file)))
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v; want an error about %q", err, c.want)
			}
		})
	}
}

func TestKeyTwice(t *testing.T) {
	b := writeSample(t, []KV{{"k", Value{Type: TypeUint8, V: uint64(1)}}, {"k", Value{Type: TypeUint8, V: uint64(2)}}}, nil)
	if _, err := Parse(bytes.NewReader(b), int64(len(b))); err == nil || !strings.Contains(err.Error(), `key "k" appears twice`) {
		t.Errorf("got %v", err)
	}
}

func TestNestingLimit(t *testing.T) {
	deep := Value{Type: TypeArray, Elem: TypeArray, V: []Value{{Type: TypeArray, Elem: TypeArray, V: []Value{{Type: TypeArray, Elem: TypeUint8, V: []uint64{1}}}}}}
	b := writeSample(t, []KV{{"deep", deep}}, nil)
	if _, err := Parse(bytes.NewReader(b), int64(len(b))); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("got %v", err)
	}
}

func TestSplits(t *testing.T) {
	dir := t.TempDir()
	ts := sampleTensors()
	split := func(no int, tensors []WriteTensor, extra ...KV) {
		kv := append([]KV{
			{"split.no", Value{Type: TypeUint16, V: uint64(no)}},
			{"split.count", Value{Type: TypeUint16, V: uint64(2)}},
			{"split.tensors.count", Value{Type: TypeInt32, V: int64(len(ts))}},
		}, extra...)
		b := writeSample(t, kv, tensors)
		if err := os.WriteFile(filepath.Join(dir, "m-0000"+string(rune('1'+no))+"-of-00002.gguf"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	split(0, ts[:2], KV{"general.architecture", Value{Type: TypeString, V: "llama"}})
	split(1, ts[2:])
	for _, name := range []string{"m-00001-of-00002.gguf", "m-00002-of-00002.gguf"} {
		m, err := Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Files) != 2 || len(m.Tensors) != len(ts) || m.Tensors[2].File != 1 || m.Tensors[0].File != 0 {
			t.Errorf("opened from %s: %d files, %d tensors", name, len(m.Files), len(m.Tensors))
		}
		if a, _ := m.Meta().String("general.architecture"); a != "llama" {
			t.Errorf("opened from %s: metadata of split %v", name, a)
		}
	}
	os.Remove(filepath.Join(dir, "m-00002-of-00002.gguf"))
	if _, err := Open(filepath.Join(dir, "m-00001-of-00002.gguf")); err == nil || !os.IsNotExist(errors.Unwrap(err)) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing split: %v", err)
	}
}
