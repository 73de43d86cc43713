package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// WriteTensor is one tensor to write: Data holds its blocks as stored.
type WriteTensor struct {
	Name string
	Dims []uint64 // GGUF order, fastest-varying first
	Type GGMLType
	Data []byte
}

// Write writes a GGUF v3 file with the metadata kv (in order) and the
// tensors, aligned to general.alignment when kv sets it (32 otherwise).
// Hearth reads GGUF; it writes it for its tests and tools (a file made
// from a committed test checkpoint), so values must be of the types
// Value documents.
func Write(w io.Writer, kv []KV, tensors []WriteTensor) error {
	bw := bufio.NewWriter(w)
	e := &encoder{w: bw}
	align := int64(defaultAlign)
	for _, x := range kv {
		if x.Key == "general.alignment" {
			a, ok := x.Value.V.(uint64)
			if !ok {
				return fmt.Errorf("general.alignment: %T, want uint64", x.Value.V)
			}
			align = int64(a)
		}
	}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kv)))
	for _, x := range kv {
		e.str(x.Key)
		e.u32(uint32(x.Value.Type))
		if err := e.value(x.Value); err != nil {
			return fmt.Errorf("metadata %q: %w", x.Key, err)
		}
	}
	var off int64
	for _, t := range tensors {
		bt, ok := t.Type.block()
		if !ok {
			return fmt.Errorf("tensor %q: type %s", t.Name, t.Type)
		}
		elems := uint64(1)
		for _, d := range t.Dims {
			elems *= d
		}
		if want := int64(elems) / int64(bt.elems) * int64(bt.bytes); want != int64(len(t.Data)) {
			return fmt.Errorf("tensor %q: %d bytes of data, %s %v needs %d", t.Name, len(t.Data), t.Type, t.Dims, want)
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(uint64(off))
		off = alignUp(off+int64(len(t.Data)), align)
	}
	e.pad(align)
	for _, t := range tensors {
		e.raw(t.Data)
		e.pad(align)
	}
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
	b   [8]byte
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
		e.n += int64(len(b))
	}
}

func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.b[:], v); e.raw(e.b[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.b[:], v); e.raw(e.b[:8]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }

func (e *encoder) pad(align int64) {
	if r := e.n % align; r != 0 {
		e.raw(make([]byte, align-r))
	}
}

func (e *encoder) scalar(t ValueType, v any) error {
	switch t {
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		u, ok := v.(uint64)
		if !ok {
			return fmt.Errorf("%s value %T, want uint64", t, v)
		}
		switch t {
		case TypeUint8:
			e.raw([]byte{byte(u)})
		case TypeUint16:
			binary.LittleEndian.PutUint16(e.b[:], uint16(u))
			e.raw(e.b[:2])
		case TypeUint32:
			e.u32(uint32(u))
		default:
			e.u64(u)
		}
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		i, ok := v.(int64)
		if !ok {
			return fmt.Errorf("%s value %T, want int64", t, v)
		}
		switch t {
		case TypeInt8:
			e.raw([]byte{byte(i)})
		case TypeInt16:
			binary.LittleEndian.PutUint16(e.b[:], uint16(i))
			e.raw(e.b[:2])
		case TypeInt32:
			e.u32(uint32(i))
		default:
			e.u64(uint64(i))
		}
	case TypeFloat32, TypeFloat64:
		f, ok := v.(float64)
		if !ok {
			return fmt.Errorf("%s value %T, want float64", t, v)
		}
		if t == TypeFloat32 {
			e.u32(math.Float32bits(float32(f)))
		} else {
			e.u64(math.Float64bits(f))
		}
	case TypeBool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("bool value %T", v)
		}
		if b {
			e.raw([]byte{1})
		} else {
			e.raw([]byte{0})
		}
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("string value %T", v)
		}
		e.str(s)
	default:
		return fmt.Errorf("value type %s", t)
	}
	return nil
}

func (e *encoder) value(v Value) error {
	if v.Type != TypeArray {
		return e.scalar(v.Type, v.V)
	}
	e.u32(uint32(v.Elem))
	switch xs := v.V.(type) {
	case []string:
		return scalars(e, v.Elem, xs)
	case []uint64:
		return scalars(e, v.Elem, xs)
	case []int64:
		return scalars(e, v.Elem, xs)
	case []float64:
		return scalars(e, v.Elem, xs)
	case []bool:
		return scalars(e, v.Elem, xs)
	case []Value:
		e.u64(uint64(len(xs)))
		for _, x := range xs {
			if err := e.value(x); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("array value %T", v.V)
}

// scalars writes an array's length and elements.
func scalars[T any](e *encoder, t ValueType, xs []T) error {
	e.u64(uint64(len(xs)))
	for _, x := range xs {
		if err := e.scalar(t, x); err != nil {
			return err
		}
	}
	return nil
}
