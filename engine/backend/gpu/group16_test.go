package gpu

import (
	"fmt"
	"math"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
	"hearth/engine/weights"
)

// TestGroup16 checks weights quantized in groups of 16 (what engine/gguf
// makes of GGUF's Q2_K, Q3_K and Q6_K), where a 32-element block holds two
// groups, against the cpu backend: every width and scale dtype, through
// the matrix-vector kernels of every test shape (row and column kernels,
// x staged whole, in chunks and ragged, with an RMSNorm prologue, q/k/v
// and gate/up fused, a group of 16 beside one of 64), the GEMM (tiled,
// simple, split weights) and the per-element path (a width that is not a
// multiple of 32).
func TestGroup16(t *testing.T) {
	f := newFixture(t)
	quant := func(name string, bits int, sdt tensor.DType, rows, cols int) {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = float32(f.rng.NormFloat64() * 0.2)
		}
		w, err := weights.Quantize(v, rows, cols, tensor.Quant{Bits: bits, GroupSize: 16}, sdt)
		if err != nil {
			t.Fatal(err)
		}
		w.Name = name
		f.ws = append(f.ws, w)
	}
	type wc struct {
		name string
		bits int
		sdt  tensor.DType
	}
	kinds := []wc{{"g2", 2, tensor.BF16}, {"g3", 3, tensor.F32}, {"g4", 4, tensor.F16}, {"g5", 5, tensor.BF16}, {"g6", 6, tensor.F32}, {"g8", 8, tensor.F16},
		{"g2f32", 2, tensor.F32}, {"g4f32", 4, tensor.F32}, {"g6bf", 6, tensor.BF16}, {"g8f32", 8, tensor.F32}}
	for i, k := range kinds {
		quant(k.name, k.bits, k.sdt, 29+4*i, 96)
	}
	quant("odd", 6, tensor.F32, 9, 48)        // 48 columns: not whole 32-blocks
	quant("wide", 6, tensor.F32, 8, 32*241)   // x staged in chunks, the last ragged
	quant("wide4", 4, tensor.BF16, 24, 14336) // (448 blocks)
	quant("q16", 6, tensor.F32, 96, 64)       // a layer's q, k, v as a Q4_K_M
	quant("k16", 4, tensor.BF16, 32, 64)      // file may mix them
	quant("v16", 8, tensor.F16, 32, 64)       //
	quant("gate16", 4, tensor.F32, 128, 64)   // gate and up
	quant("up16", 6, tensor.F32, 128, 64)     //
	quant("down16", 3, tensor.F32, 64, 128)   //
	x96, x3, x20 := f.randn(96), f.randn(3*96), f.randn(20*96)
	x48, x64, x3b := f.randn(3*48), f.randn(64), f.randn(3*64)
	xo, xw, h3 := f.randn(32*241), f.randn(14336), f.randn(3*128)
	for i := range xo {
		xo[i] *= 0.1
	}
	for i := range xw {
		xw[i] *= 0.1
	}
	type build = func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T
	type tc struct {
		name  string
		build build
	}
	var cases []tc
	for _, k := range kinds {
		for _, m := range []int{1, 3, 20} {
			x := map[int][]float32{1: x96, 3: x3, 20: x20}[m]
			cases = append(cases, tc{fmt.Sprintf("%s-m%d", k.name, m), func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
				return []tensor.T{g.MatMul(g.Input(x, m, 96), w[k.name])}
			}})
		}
	}
	cases = append(cases,
		tc{"odd-m3", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.Input(x48, 3, 48), w["odd"])}
		}},
		tc{"odd-m1", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.Input(x48[:48], 1, 48), w["odd"])}
		}},
		tc{"chunked-ragged", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.Input(xo, 1, 32*241), w["wide"])}
		}},
		tc{"rms-wide", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.RMSNorm(g.Input(xw, 1, 14336), tensor.T{}, 0.99, 0), w["wide4"])}
		}},
		tc{"rms+group", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.RMSNorm(g.Input(x64, 1, 64), w["nw"], 1e-5, 0)
			return []tensor.T{g.MatMul(h, w["q16"]), g.MatMul(h, w["k16"]), g.MatMul(h, w["v16"])}
		}},
		tc{"group-beside-g32", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.Input(x64, 1, 64)
			return []tensor.T{g.MatMul(h, w["q16"]), g.MatMul(h, w["wk"]), g.MatMul(h, w["v16"])}
		}},
		tc{"group-m3", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.Input(x3b, 3, 64)
			return []tensor.T{g.MatMul(h, w["q16"]), g.MatMul(h, w["k16"]), g.MatMul(h, w["v16"])}
		}},
		tc{"rms+dual", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.RMSNorm(g.Input(x64, 1, 64), w["nw"], 1e-5, 0)
			return []tensor.T{g.Mul(g.SiLU(g.MatMul(h, w["gate16"])), g.MatMul(h, w["up16"]))}
		}},
		tc{"dual-beside-g64", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.Input(x64, 1, 64)
			return []tensor.T{g.Mul(g.SiLU(g.MatMul(h, w["gate16"])), g.MatMul(h, w["up"]))}
		}},
		tc{"residual-m3", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.Add(g.MatMul(g.Input(h3, 3, 128), w["down16"]), g.Input(x3b, 3, 64))}
		}},
	)
	ref := cpu.New(cpu.Options{Threads: 1})
	wr := f.upload(t, ref)
	// one row kernel of each kind (plain, with load batches) and one
	// column kernel of each kind (x in one block or several per
	// invocation): the group's arithmetic lies in the accessor they share
	opts := []Options{{}, {MatVec: MatVecShape{Rows: 2, Lanes: 8, Batch: 8}}, {MatVec: MatVecShape{Cols: 8}}, {MatVec: MatVecShape{Cols: 16, Threads: 64}},
		{Gemm: GemmShape{Simple: true}}, {WeightBlockBytes: 8192}}
	for _, opt := range opts {
		b := newBackend(t, opt)
		wg := f.upload(t, b)
		name := fmt.Sprintf("%+v", opt.MatVec)
		switch {
		case opt.Gemm.Simple:
			name = "gemm-simple"
		case opt.WeightBlockBytes > 0:
			name = "split"
		}
		t.Run(name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					want := run(t, ref, wr, c.build)
					got := run(t, b, wg, c.build)
					for o := range want {
						for i := range want[o] {
							if d := math.Abs(float64(got[o][i]-want[o][i])) / (1 + math.Abs(float64(want[o][i]))); !(d <= 1e-5) {
								t.Fatalf("output %d[%d] = %v, want %v", o, i, got[o][i], want[o][i])
							}
						}
					}
				})
			}
		})
	}
}
