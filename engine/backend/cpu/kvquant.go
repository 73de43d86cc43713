package cpu

import (
	"fmt"

	"hearth/engine/tensor"
)

// kvq is a quantized KV buffer (AllocKV): codes for [rows, heads, d], one
// byte per element (q8) or two elements to a byte (q4), and a float32
// scale per group of tensor.KVGroup of each head row.
type kvq struct {
	t      tensor.KVType
	q8     []int8 // q8 codes
	q4     []byte // q4 codes, a head row in d/2 bytes
	scales []float32
	d, g   int // head row length, groups per head row
}

// AllocKV makes a zeroed KV buffer of shape [rows, heads, headDim] of
// element type t.
func (b *Backend) AllocKV(shape []int, t tensor.KVType) (tensor.T, error) {
	if t == tensor.KVF32 {
		return b.Alloc(shape)
	}
	if t != tensor.KVQ8 && t != tensor.KVQ4 {
		return tensor.T{}, fmt.Errorf("alloc kv: the cpu backend has no %v cache", t)
	}
	if len(shape) != 3 || shape[0] < 0 || shape[1] < 1 || shape[2] < 1 {
		return tensor.T{}, fmt.Errorf("alloc kv: bad shape %v (want [rows, heads, headDim])", shape)
	}
	if t == tensor.KVQ4 && shape[2]%2 != 0 {
		return tensor.T{}, fmt.Errorf("alloc kv: q4 needs an even head dimension, not %d", shape[2])
	}
	d, g := shape[2], tensor.KVGroups(shape[2])
	q := &kvq{t: t, scales: make([]float32, shape[0]*shape[1]*g), d: d, g: g}
	if t == tensor.KVQ8 {
		q.q8 = make([]int8, tensor.Elements(shape))
	} else {
		q.q4 = make([]byte, tensor.Elements(shape)/2)
	}
	return b.push(buffer{kv: q, shape: append([]int(nil), shape...), live: true}), nil
}

// kvOf is the quantized buffer t names, or nil.
func (b *Backend) kvOf(t tensor.T) *kvq {
	if i := t.Buffer(); i >= 0 && i < len(b.bufs) {
		return b.bufs[i].kv
	}
	return nil
}

// store quantizes src (whole head rows) into head rows [hr, ...) of q.
func (q *kvq) store(src []float32, hr int) {
	for r := 0; r*q.d < len(src); r++ {
		h := hr + r
		x, sc := src[r*q.d:(r+1)*q.d], q.scales[h*q.g:(h+1)*q.g]
		if q.t == tensor.KVQ8 {
			tensor.QuantizeQ8(x, q.q8[h*q.d:(h+1)*q.d], sc)
		} else {
			tensor.QuantizeQ4(x, q.q4[h*q.d/2:(h+1)*q.d/2], sc)
		}
	}
}

// row is head row h, dequantized into dst (d floats).
func (q *kvq) row(h int, dst []float32) []float32 {
	sc := q.scales[h*q.g : (h+1)*q.g]
	if q.t == tensor.KVQ8 {
		tensor.DequantizeQ8(q.q8[h*q.d:(h+1)*q.d], sc, dst)
	} else {
		tensor.DequantizeQ4(q.q4[h*q.d/2:(h+1)*q.d/2], sc, dst[:q.d])
	}
	return dst
}
