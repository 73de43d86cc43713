package gpu

import (
	"context"
	"testing"

	"hearth/engine/tensor"
	"hearth/engine/tensor/tensortest"
)

// TestKVQuant runs quantized caches through Store and Attention against the
// float64 reference (tensortest.CheckKV), on the split and unfused paths.
func TestKVQuant(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"fused", Options{}},
		{"unfused", Options{NoFusion: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend(t, tc.opt)
			tensortest.CheckKV(t, b, tensor.KVF32)
			tensortest.CheckKV(t, b, tensor.KVQ8)
			tensortest.CheckKV(t, b, tensor.KVQ4)
		})
	}
}

// TestKVQuantRefused: a q8 buffer is not float data to other ops or Read,
// and shapes the kernels cannot take are errors.
func TestKVQuantRefused(t *testing.T) {
	b := newBackend(t, Options{})
	if _, err := b.AllocKV([]int{4, 1, 6}, tensor.KVQ8); err == nil {
		t.Error("AllocKV with head dimension 6: no error")
	}
	if _, err := b.AllocKV([]int{4, 1, 12}, tensor.KVQ4); err == nil {
		t.Error("q4 AllocKV with head dimension 12: no error")
	}
	k, err := b.AllocKV([]int{4, 1, 8}, tensor.KVQ8)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Read(k, make([]float32, 32)); err == nil {
		t.Error("Read of a q8 buffer: no error")
	}
	g := tensor.NewGraph(b)
	out := g.Add(k, g.Input(make([]float32, 32), 4, 1, 8))
	if err := b.Run(context.Background(), g, out); err == nil {
		t.Error("Add reading a q8 buffer: no error")
	}
}
