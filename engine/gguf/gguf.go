// Package gguf reads the header of GGUF files (llama.cpp's format, the one
// Ollama and LM Studio download): the metadata and the tensor index, never
// the tensor data, validated against the file's size as strictly as the
// safetensors reader (engine/weights), so that no later read can leave the
// file. A split model (-00001-of-0000N.gguf) is read as one (Open).
//
// Hearth parses the header itself rather than through a GGUF library: the
// format is small, the parser must name the field it rejects for outside
// input, and the tensor data is mapped by Hearth's own weight code
// (docs/design/gguf.md).
package gguf

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// Limits on what a header may declare before anything is allocated for it.
// Real files stay far below: a 150k-token vocabulary is one array of 150k
// strings, a 671B model about 1,100 tensors.
const (
	maxTensors    = 1 << 16
	maxKeys       = 1 << 16
	maxArrayLen   = 1 << 24 // elements of one metadata array
	maxStringLen  = 1 << 24 // bytes of one string (a chat template is ~10 kB)
	maxNameLen    = 1 << 10 // bytes of a key or tensor name (llama.cpp: 64)
	maxDims       = 4       // GGML_MAX_DIMS
	maxNesting    = 2       // arrays of arrays (llama.cpp writes none deeper)
	defaultAlign  = 32
	maxAlignment  = 1 << 16
	maxHeaderSize = 1 << 30 // metadata + index; a 256k vocabulary with merges is ~20 MB
)

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("gguf")

// ValueType is the type tag of a metadata value.
type ValueType uint32

// The metadata value types of the GGUF specification.
const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
	numValueTypes
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if t < numValueTypes {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type %d", uint32(t))
}

// Value is one metadata value: a Go bool, uint8…int64, float32/64, string,
// or []any for an array (of one element type, [] of a given Go type below).
type Value struct {
	Type ValueType
	// Elem is the element type of an array.
	Elem ValueType
	// V holds the value: bool, uint64 (every unsigned width), int64 (every
	// signed width), float64 (both float widths), string, or for arrays
	// []string, []int64, []uint64, []float64, []bool or []Value (nested).
	V any
}

// KV is one metadata entry, in file order.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo is one entry of the tensor index. Dims are in GGUF order,
// fastest-varying first (ne[0] is a row's length): a PyTorch weight of
// shape [out, in] has Dims [in, out].
type TensorInfo struct {
	Name string
	Dims []uint64
	Type GGMLType
	// Offset is absolute in the file (the data section's start added).
	Offset int64
	Size   int64 // bytes
	File   int   // index of the split file that holds it
}

// Elements is the tensor's element count.
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is one parsed GGUF file.
type File struct {
	Version   uint32
	KV        []KV
	Tensors   []TensorInfo
	Alignment int
	DataStart int64 // where the tensor data section begins
	Size      int64 // the file's size
	keys      map[string]int
}

// Get returns the metadata value under key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.keys[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// String returns key's value when it is a string.
func (f *File) String(key string) (string, bool) {
	v, ok := f.Get(key)
	s, isStr := v.V.(string)
	return s, ok && isStr
}

// Uint returns key's value when it is a non-negative integer of any width.
func (f *File) Uint(key string) (uint64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	switch x := v.V.(type) {
	case uint64:
		return x, true
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}

// Float returns key's value when it is a number.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	switch x := v.V.(type) {
	case float64:
		return x, true
	case uint64:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// Parse reads and validates the header of a GGUF file of size bytes.
func Parse(r io.ReaderAt, size int64) (*File, error) {
	p := &parser{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 1<<16), size: size}
	f, err := p.file()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return f, nil
}

// parser reads the header sequentially, counting bytes so that every
// declared length is checked against what is left of the file.
type parser struct {
	r    *bufio.Reader
	pos  int64
	size int64
	buf  [8]byte
}

func (p *parser) left() int64 { return p.size - p.pos }

func (p *parser) read(n int, field string) ([]byte, error) {
	if int64(n) > p.left() {
		return nil, fmt.Errorf("%s: the file ends at byte %d (truncated?)", field, p.size)
	}
	b := p.buf[:n]
	if _, err := io.ReadFull(p.r, b); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	p.pos += int64(n)
	if p.pos > maxHeaderSize {
		return nil, fmt.Errorf("%s: the header is over %d bytes", field, maxHeaderSize)
	}
	return b, nil
}

func (p *parser) u32(field string) (uint32, error) {
	b, err := p.read(4, field)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (p *parser) u64(field string) (uint64, error) {
	b, err := p.read(8, field)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (p *parser) str(field string, limit int) (string, error) {
	n, err := p.u64(field + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(limit) {
		return "", fmt.Errorf("%s: length %d is over the %d-byte limit", field, n, limit)
	}
	if int64(n) > p.left() {
		return "", fmt.Errorf("%s: length %d runs past the end of the file (truncated?)", field, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(p.r, b); err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	p.pos += int64(n)
	return string(b), nil
}

func (p *parser) file() (*File, error) {
	b, err := p.read(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(b) != Magic {
		return nil, fmt.Errorf("magic: %q is not %q (not a GGUF file)", b, Magic)
	}
	f := &File{Size: p.size, Alignment: defaultAlign, keys: map[string]int{}}
	if f.Version, err = p.u32("version"); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, fmt.Errorf("version: %d (Hearth reads GGUF versions 2 and 3)", f.Version)
	}
	nt, err := p.u64("tensor_count")
	if err != nil {
		return nil, err
	}
	if nt > maxTensors {
		return nil, fmt.Errorf("tensor_count: %d is over the limit of %d", nt, maxTensors)
	}
	nkv, err := p.u64("metadata_kv_count")
	if err != nil {
		return nil, err
	}
	if nkv > maxKeys {
		return nil, fmt.Errorf("metadata_kv_count: %d is over the limit of %d", nkv, maxKeys)
	}
	for i := range nkv {
		key, err := p.str(fmt.Sprintf("metadata[%d].key", i), maxNameLen)
		if err != nil {
			return nil, err
		}
		if _, dup := f.keys[key]; dup {
			return nil, fmt.Errorf("metadata[%d]: key %q appears twice", i, key)
		}
		t, err := p.u32(fmt.Sprintf("metadata %q type", key))
		if err != nil {
			return nil, err
		}
		v, err := p.value(ValueType(t), key, 0)
		if err != nil {
			return nil, err
		}
		f.keys[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	if v, ok := f.Get("general.alignment"); ok {
		a, isU := v.V.(uint64)
		if !isU || v.Type != TypeUint32 || a == 0 || a > maxAlignment || a&(a-1) != 0 {
			return nil, fmt.Errorf("general.alignment: %v (%s) is not a power of two up to %d stored as uint32", v.V, v.Type, maxAlignment)
		}
		f.Alignment = int(a)
	}
	names := map[string]bool{}
	for i := range nt {
		t, err := p.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		if names[t.Name] {
			return nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		names[t.Name] = true
		f.Tensors = append(f.Tensors, t)
	}
	f.DataStart = alignUp(p.pos, int64(f.Alignment))
	if len(f.Tensors) > 0 && f.DataStart > p.size {
		return nil, fmt.Errorf("data section: starts at byte %d, past the end of the file (%d bytes; truncated?)", f.DataStart, p.size)
	}
	return f, f.placeTensors()
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }

func (p *parser) tensorInfo(i uint64) (TensorInfo, error) {
	at := fmt.Sprintf("tensor[%d]", i)
	name, err := p.str(at+".name", maxNameLen)
	if err != nil {
		return TensorInfo{}, err
	}
	at = fmt.Sprintf("tensor %q", name)
	nd, err := p.u32(at + " n_dims")
	if err != nil {
		return TensorInfo{}, err
	}
	if nd == 0 || nd > maxDims {
		return TensorInfo{}, fmt.Errorf("%s: n_dims %d (1 to %d)", at, nd, maxDims)
	}
	t := TensorInfo{Name: name, Dims: make([]uint64, nd)}
	elems := uint64(1)
	for d := range t.Dims {
		if t.Dims[d], err = p.u64(fmt.Sprintf("%s dim %d", at, d)); err != nil {
			return TensorInfo{}, err
		}
		if t.Dims[d] == 0 || t.Dims[d] > math.MaxInt64/elems {
			return TensorInfo{}, fmt.Errorf("%s: dim %d is %d (the element count must be positive and fit in 63 bits)", at, d, t.Dims[d])
		}
		elems *= t.Dims[d]
	}
	typ, err := p.u32(at + " type")
	if err != nil {
		return TensorInfo{}, err
	}
	t.Type = GGMLType(typ)
	bt, ok := t.Type.block()
	if !ok {
		return TensorInfo{}, fmt.Errorf("%s: type %s is not one Hearth reads (%s)", at, t.Type, supportedTypes())
	}
	if t.Dims[0]%uint64(bt.elems) != 0 {
		return TensorInfo{}, fmt.Errorf("%s: a row of %d elements is not a whole number of %s blocks of %d", at, t.Dims[0], t.Type, bt.elems)
	}
	blocks := elems / uint64(bt.elems)
	if blocks > math.MaxInt64/uint64(bt.bytes) {
		return TensorInfo{}, fmt.Errorf("%s: %d blocks of %s overflow a file offset", at, blocks, t.Type)
	}
	t.Size = int64(blocks * uint64(bt.bytes))
	off, err := p.u64(at + " offset")
	if err != nil {
		return TensorInfo{}, err
	}
	if off > math.MaxInt64/2 {
		return TensorInfo{}, fmt.Errorf("%s: offset %d is past any file", at, off)
	}
	t.Offset = int64(off) // relative until placeTensors
	return t, nil
}

// placeTensors makes the offsets absolute and checks that each tensor is
// aligned, inside the file and clear of the others.
func (f *File) placeTensors() error {
	dataLen := f.Size - f.DataStart
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%int64(f.Alignment) != 0 {
			return fmt.Errorf("tensor %q: offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > dataLen || t.Size > dataLen-t.Offset {
			return fmt.Errorf("tensor %q: bytes %d to %d of the data section run past its end (%d bytes; truncated?)", t.Name, t.Offset, t.Offset+t.Size, dataLen)
		}
		t.Offset += f.DataStart
	}
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(f.Tensors[i].Offset, f.Tensors[j].Offset) })
	for k := 1; k < len(order); k++ {
		a, b := f.Tensors[order[k-1]], f.Tensors[order[k]]
		if a.Offset+a.Size > b.Offset {
			return fmt.Errorf("tensors %q and %q overlap", a.Name, b.Name)
		}
	}
	return nil
}

func (p *parser) value(t ValueType, key string, depth int) (Value, error) {
	at := fmt.Sprintf("metadata %q", key)
	v := Value{Type: t}
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		b, err := p.read(1, at)
		if err != nil {
			return v, err
		}
		switch t {
		case TypeUint8:
			v.V = uint64(b[0])
		case TypeInt8:
			v.V = int64(int8(b[0]))
		default:
			if b[0] > 1 {
				return v, fmt.Errorf("%s: bool byte %d (0 or 1)", at, b[0])
			}
			v.V = b[0] == 1
		}
	case TypeUint16, TypeInt16:
		b, err := p.read(2, at)
		if err != nil {
			return v, err
		}
		u := binary.LittleEndian.Uint16(b)
		if t == TypeUint16 {
			v.V = uint64(u)
		} else {
			v.V = int64(int16(u))
		}
	case TypeUint32, TypeInt32, TypeFloat32:
		u, err := p.u32(at)
		if err != nil {
			return v, err
		}
		switch t {
		case TypeUint32:
			v.V = uint64(u)
		case TypeInt32:
			v.V = int64(int32(u))
		default:
			v.V = float64(math.Float32frombits(u))
		}
	case TypeUint64, TypeInt64, TypeFloat64:
		u, err := p.u64(at)
		if err != nil {
			return v, err
		}
		switch t {
		case TypeUint64:
			v.V = u
		case TypeInt64:
			v.V = int64(u)
		default:
			v.V = math.Float64frombits(u)
		}
	case TypeString:
		s, err := p.str(at, maxStringLen)
		if err != nil {
			return v, err
		}
		v.V = s
	case TypeArray:
		if depth >= maxNesting {
			return v, fmt.Errorf("%s: arrays nested deeper than %d", at, maxNesting)
		}
		et, err := p.u32(at + " array type")
		if err != nil {
			return v, err
		}
		v.Elem = ValueType(et)
		if v.Elem >= numValueTypes {
			return v, fmt.Errorf("%s: array of unknown type %d", at, et)
		}
		n, err := p.u64(at + " array length")
		if err != nil {
			return v, err
		}
		// Each element takes at least one byte: a count beyond what is
		// left of the file is a lie, caught before anything is allocated.
		if n > maxArrayLen || int64(n) > p.left() {
			return v, fmt.Errorf("%s: array length %d is over the limit (%d, and the %d bytes left in the file)", at, n, maxArrayLen, p.left())
		}
		if v.V, err = p.array(v.Elem, int(n), key, depth); err != nil {
			return v, err
		}
	default:
		return v, fmt.Errorf("%s: unknown value type %d", at, uint32(t))
	}
	return v, nil
}

// array reads n elements of type t into a typed slice.
func (p *parser) array(t ValueType, n int, key string, depth int) (any, error) {
	switch t {
	case TypeString:
		return elements[string](p, t, n, key, depth)
	case TypeArray:
		return elements[Value](p, t, n, key, depth)
	case TypeBool:
		return elements[bool](p, t, n, key, depth)
	case TypeFloat32, TypeFloat64:
		return elements[float64](p, t, n, key, depth)
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		return elements[uint64](p, t, n, key, depth)
	}
	return elements[int64](p, t, n, key, depth)
}

// elements reads n values of type t, each held in V as a T (Value itself
// for nested arrays).
func elements[T any](p *parser, t ValueType, n int, key string, depth int) ([]T, error) {
	out := make([]T, 0, min(n, 1<<16))
	for range n {
		x, err := p.value(t, key, depth+1)
		if err != nil {
			return nil, err
		}
		if v, ok := any(x).(T); ok {
			out = append(out, v)
		} else {
			out = append(out, x.V.(T))
		}
	}
	return out, nil
}
