package gpu

import (
	"sync"
	"testing"

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
