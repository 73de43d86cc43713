package gpu

import (
	"context"
	"strings"
	"sync"
	"testing"

	"hearth/engine/tensor"
	"hearth/engine/tensor/tensortest"
	"hearth/internal/testenv"
)

const needAdapter = "a Vulkan/Metal adapter (apt-get install mesa-vulkan-drivers libvulkan1)"

var probe struct {
	once sync.Once
	err  error
}

// newBackend makes a backend for a test, skipping (or failing under
// HEARTH_REQUIRE_ALL=1) when the machine has no adapter.
func newBackend(t testing.TB, opt Options) *Backend {
	t.Helper()
	probe.once.Do(func() { _, probe.err = Probe() })
	testenv.Need(t, needAdapter, probe.err == nil)
	b, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
	}{
		{"fused", Options{}},
		{"unfused", Options{NoFusion: true}},
		{"split", Options{WeightBlockBytes: 1024}},
		{"rows4lanes32", Options{MatVec: MatVecShape{Rows: 4, Lanes: 32}}},
		{"rows1lanes16", Options{MatVec: MatVecShape{Rows: 1, Lanes: 16}}},
		{"rows2lanes32", Options{MatVec: MatVecShape{Rows: 2, Lanes: 32}}},
		{"rows2lanes8", Options{MatVec: MatVecShape{Rows: 2, Lanes: 8}}},
		{"rows2lanes32batch4", Options{MatVec: MatVecShape{Rows: 2, Lanes: 32, Batch: 4}}},
		{"rows4lanes16batch2", Options{MatVec: MatVecShape{Rows: 4, Lanes: 16, Batch: 2}}},
		{"rows2lanes16batch8", Options{MatVec: MatVecShape{Rows: 2, Lanes: 16, Batch: 8}}},
		{"cols16threads64", Options{MatVec: MatVecShape{Cols: 16, Threads: 64}}},
	} {
		t.Run(tc.name, func(t *testing.T) { tensortest.Check(t, newBackend(t, tc.opt)) })
	}
}

func TestReadBandwidth(t *testing.T) {
	b := newBackend(t, Options{})
	rates, err := b.ReadBandwidth(3<<20+5, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rates) != 2 || rates[0] <= 0 || rates[1] <= 0 {
		t.Fatalf("rates %v, want two positive", rates)
	}
	if _, err := b.ReadBandwidth(0, 1); err == nil {
		t.Error("a size of 0 was accepted")
	}
}

// TestPending starts runs one after another and reads each one's output
// after the next has started, as greedy decoding one step ahead does; a
// run's outputs are gone once two more have started.
func TestPending(t *testing.T) {
	b := newBackend(t, Options{})
	ctx := context.Background()
	start := func(v float32) (tensor.Pending, tensor.T) {
		g := tensor.NewGraph(b)
		y := g.Scale(g.Input([]float32{v, v + 1, v + 2}, 3), 2)
		p, err := b.Start(ctx, g, y)
		if err != nil {
			t.Fatal(err)
		}
		return p, y
	}
	p0, y0 := start(1)
	for i := 1; i < 6; i++ {
		p1, y1 := start(float32(10 * i))
		got := make([]float32, 3)
		if err := p0.Read(y0, got); err != nil {
			t.Fatalf("run %d read after the next started: %v", i-1, err)
		}
		if base := float32(10 * (i - 1)); i > 1 && got[0] != 2*base || i == 1 && got[0] != 2 {
			t.Fatalf("run %d read %v", i-1, got)
		}
		p0, y0 = p1, y1
	}
	old, oy := p0, y0
	start(100)
	start(200)
	if err := old.Read(oy, make([]float32, 3)); err == nil || !strings.Contains(err.Error(), "overwritten") {
		t.Fatalf("a run two runs old read: %v", err)
	}
}
