package qwen35_test

import (
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/cache"
	"hearth/engine/checkpoint"
	"hearth/engine/families"
	"hearth/engine/fit"
	"hearth/engine/nn"
	"hearth/engine/weights"
	"hearth/internal/testmodels"
)

// TestCacheLayersMatchNewCaches: the fit estimate's layers are what
// NewCaches allocates, a KV cache for each full-attention layer and for
// each DeltaNet layer a state of exactly the bytes it holds.
func TestCacheLayersMatchNewCaches(t *testing.T) {
	for _, name := range []string{"qwen3_5-f32", "qwen3_5_moe-q4g64"} {
		t.Run(name, func(t *testing.T) {
			dir := testmodels.Entry{Dir: name}.Path()
			ck, err := checkpoint.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			set, err := weights.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			b := cpu.New(cpu.Options{Threads: 1})
			defer b.Close()
			binder := weights.NewBinder(set, ck.Quant)
			fam, err := families.Resolve(ck.Config)
			if err != nil {
				t.Fatal(err)
			}
			m, err := fam.New(ck.Config, &nn.Loader{B: b, W: binder})
			if err != nil {
				t.Fatal(err)
			}
			if err := binder.Audit(m.AuditIgnore()); err != nil {
				t.Fatal(err)
			}
			caches, err := m.NewCaches(b, 64, 16)
			if err != nil {
				t.Fatal(err)
			}
			layers := families.Shape(ck.Config, 1).Layers
			if len(layers) != len(caches) {
				t.Fatalf("%d fit layers for %d caches", len(layers), len(caches))
			}
			for i, c := range caches {
				switch c := c.(type) {
				case *cache.State:
					if l := layers[i]; l.Kind != fit.Recurrent || l.StateBytes != c.Bytes() {
						t.Errorf("layer %d: fit says %+v, the state holds %d bytes", i, l, c.Bytes())
					}
				case *cache.KV:
					if l := layers[i]; l.Kind != fit.Full || l.KVHeads != ck.Config.NumKeyValueHeads || l.HeadDim != ck.Config.HeadDim {
						t.Errorf("layer %d: fit says %+v for a KV cache", i, l)
					}
				default:
					t.Errorf("layer %d: cache %T", i, c)
				}
				c.Free()
			}
		})
	}
}
