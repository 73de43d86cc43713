package gpu

import (
	"fmt"
	"strings"

	"hearth/engine/tensor"
)

// A quantized KV buffer (AllocKV) is one storage buffer of u32 words: the
// codes of every head row, [rows, heads, d/4] words of four int8 (q8) or
// [rows, heads, d/8] words of eight 4-bit codes (q4, the first element in
// the low bits), then the head rows' float32 scales, [rows, heads,
// groups], from word kvSoff. One binding per buffer keeps the attention
// kernel's bindings as they are.

// AllocKV makes a zeroed KV buffer of shape [rows, heads, headDim] of
// element type t.
func (b *Backend) AllocKV(shape []int, t tensor.KVType) (tensor.T, error) {
	if t == tensor.KVF32 {
		return b.Alloc(shape)
	}
	if t != tensor.KVQ8 && t != tensor.KVQ4 {
		return tensor.T{}, fmt.Errorf("alloc kv: the gpu backend has no %v cache", t)
	}
	if len(shape) != 3 || shape[0] < 0 || shape[1] < 1 || shape[2] < 1 {
		return tensor.T{}, fmt.Errorf("alloc kv: bad shape %v (want [rows, heads, headDim])", shape)
	}
	per := 4 // elements per word
	if t == tensor.KVQ4 {
		per = 8
	}
	if shape[2]%per != 0 {
		return tensor.T{}, fmt.Errorf("alloc kv: %v needs a head dimension that is a multiple of %d, not %d", t, per, shape[2])
	}
	hrows := uint64(shape[0]) * uint64(shape[1])
	words := hrows * uint64(shape[2]/per+tensor.KVGroups(shape[2]))
	if words*4 > b.maxBind {
		return tensor.T{}, fmt.Errorf("alloc kv %v: %d bytes exceed the adapter's %d-byte binding limit", shape, words*4, b.maxBind)
	}
	data, size, err := b.newBuffer("kv "+t.String(), words*4, func(dst []byte) { clear(dst) })
	if err != nil {
		return tensor.T{}, fmt.Errorf("alloc kv %v: %w", shape, err)
	}
	buf := &buffer{name: "kv " + t.String(), shape: append([]int(nil), shape...), kind: kind{dt: tensor.U32}, kv: t,
		kvSoff: uint32(hrows * uint64(shape[2]/per)), blocks: []block{{rows: shape[0], data: data, dataSize: size}}}
	return b.push(buf), nil
}

// storeKV quantizes Store node i's source into the quantized buffer dst:
// one invocation per group of a head row.
func (c *compiler) storeKV(i int, dst *buffer) error {
	g := c.g
	nd := &g.Nodes[i]
	x, err := c.f32(nd.In[1])
	if err != nil {
		return err
	}
	hkv, d := dst.shape[1], dst.shape[2]
	groups := tensor.KVGroups(d)
	count := nd.Shape[0] * hkv * groups
	c.add(kspec{label: "Store" + strings.ToUpper(dst.kv.String()), src: source("kvstore", map[string]any{"D": d, "G": groups, "Group": tensor.KVGroup, "Q4": dst.kv == tensor.KVQ4}),
		ops: []operand{x, {kind: opData, buf: dst, write: true}},
		params: func(g *tensor.Graph, p *[16]uint32) {
			p[0], p[1], p[2] = uint32(count), uint32(g.Nodes[i].I[0]*hkv), dst.kvSoff
		},
		grid: grid1((count+63)/64, 1)})
	return nil
}

// kvOperand is the read operand of a quantized KV buffer that Attention
// takes.
func (c *compiler) kvOperand(t tensor.T) (operand, *buffer, bool) {
	buf := c.bufOf(t)
	if buf == nil || buf.kv == tensor.KVF32 {
		return operand{}, nil, false
	}
	return operand{kind: opData, buf: buf}, buf, true
}
