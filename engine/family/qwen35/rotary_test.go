package qwen35

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
)

// TestVisionRotary: the three sectioned RoPEs of a pass holding a picture
// are one rotation per pair, by the position of the stream the
// interleaved mrope_section gives that pair.
func TestVisionRotary(t *testing.T) {
	const n, heads, hd, dims = 3, 2, 12, 8
	b := cpu.New(cpu.Options{Threads: 1})
	defer b.Close()
	m := &Model{mrope: [3]int{2, 1, 1}}
	table := &tensor.Rope{InvFreq: []float32{1, 0.1, 0.01, 0.001}, Dims: dims, Scale: 1}
	pos := [3][]int32{{5, 5, 5}, {5, 6, 7}, {5, 9, 4}}
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n*heads*hd)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	g := tensor.NewGraph(b)
	rot, err := m.rotary(g, pos, table)
	if err != nil {
		t.Fatal(err)
	}
	if !rot.multi {
		t.Fatal("streams that differ gave the one-stream rotation")
	}
	out := rot.apply(g, g.Input(x, n, heads, hd))
	if err := b.Run(context.Background(), g, out); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, len(x))
	if err := b.Read(out, got); err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), x...)
	streams := []int{0, 1, 2, 0} // pair j's stream for mrope_section [2, 1, 1]
	for tok := 0; tok < n; tok++ {
		for h := 0; h < heads; h++ {
			v := want[(tok*heads+h)*hd:]
			for j := 0; j < dims/2; j++ {
				a := float64(float32(pos[streams[j]][tok]) * table.InvFreq[j])
				c, s := float32(math.Cos(a)), float32(math.Sin(a))
				x1, x2 := v[j], v[j+dims/2]
				v[j], v[j+dims/2] = x1*c-x2*s, x2*c+x1*s
			}
		}
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-6 {
			t.Fatalf("[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	for j, s := range streams {
		if got := stream(j, m.mrope); got != s {
			t.Errorf("stream(%d) = %d, want %d", j, got, s)
		}
	}
}
