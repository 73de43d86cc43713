package cpu

import (
	"context"
	"strings"
	"testing"

	"hearth/engine/tensor"
	"hearth/engine/tensor/tensortest"
)

// TestKVQuant runs quantized caches through Store and Attention (per-query
// and blocked paths) on every kernel set, against the float64 reference.
func TestKVQuant(t *testing.T) {
	for _, ks := range KernelSets() {
		t.Run(ks, func(t *testing.T) {
			b := New(Options{Threads: 2, Kernels: ks})
			defer b.Close()
			tensortest.CheckKV(t, b, tensor.KVF32)
			tensortest.CheckKV(t, b, tensor.KVQ8)
			tensortest.CheckKV(t, b, tensor.KVQ4)
		})
	}
}

// TestKVQuantRefused: a quantized buffer is not float data to any other op
// or to Read, and a bad shape is an error.
func TestKVQuantRefused(t *testing.T) {
	b := New(Options{Threads: 1})
	defer b.Close()
	if _, err := b.AllocKV([]int{4, 8}, tensor.KVQ8); err == nil {
		t.Error("AllocKV of a 2-D shape: no error")
	}
	if _, err := b.AllocKV([]int{4, 1, 7}, tensor.KVQ4); err == nil {
		t.Error("q4 AllocKV with head dimension 7: no error")
	}
	k, err := b.AllocKV([]int{4, 1, 8}, tensor.KVQ8)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Read(k, make([]float32, 32)); err == nil || !strings.Contains(err.Error(), "no float data") {
		t.Errorf("Read of a q8 buffer: %v", err)
	}
	g := tensor.NewGraph(b)
	out := g.Add(k, g.Input(make([]float32, 32), 4, 1, 8))
	if err := b.Run(context.Background(), g, out); err == nil {
		t.Error("Add reading a q8 buffer: no error")
	}
}
