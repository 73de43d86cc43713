package gpu

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
	"hearth/engine/weights"
)

// fixture uploads the same random weights to a backend.
type fixture struct {
	rng *rand.Rand
	ws  []tensor.Weight
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{rng: rand.New(rand.NewPCG(7, 11))}
	dense := func(name string, dt tensor.DType, shape ...int) {
		n := tensor.Elements(shape)
		data := make([]byte, n*dt.Size())
		for i := 0; i < n; i++ {
			v := float32(f.rng.NormFloat64() * 0.5)
			switch dt {
			case tensor.F32:
				binary.LittleEndian.PutUint32(data[i*4:], math.Float32bits(v))
			case tensor.F16:
				binary.LittleEndian.PutUint16(data[i*2:], tensor.FloatToHalf(v))
			case tensor.BF16:
				binary.LittleEndian.PutUint16(data[i*2:], tensor.FloatToBF16(v))
			}
		}
		f.ws = append(f.ws, tensor.Weight{Name: name, DType: dt, Shape: shape, Data: data})
	}
	quant := func(name string, bits, group, rows, cols int) {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = float32(f.rng.NormFloat64() * 0.2)
		}
		w, err := weights.Quantize(v, rows, cols, tensor.Quant{Bits: bits, GroupSize: group}, tensor.BF16)
		if err != nil {
			t.Fatal(err)
		}
		w.Name = name
		f.ws = append(f.ws, w)
	}
	quant("wq", 4, 32, 96, 64)
	quant("wk", 4, 32, 32, 64)
	quant("wv", 4, 32, 32, 64)
	quant("gate", 8, 64, 128, 64)
	quant("up", 8, 64, 128, 64)
	quant("w3", 3, 64, 40, 64)
	quant("w5", 5, 32, 40, 64)
	quant("w6", 6, 64, 40, 64)
	// wider than workgroup memory holds: x is staged in chunks (448
	// blocks of 32; 241 blocks, prime, leaves a ragged last chunk)
	quant("wide", 4, 64, 24, 14336)
	quant("odd", 4, 32, 8, 32*241)
	dense("down", tensor.F16, 64, 128)
	dense("wbf", tensor.BF16, 48, 64)
	dense("wf32", tensor.F32, 64, 64)
	dense("wf32b", tensor.F32, 32, 64)
	dense("wf32c", tensor.F32, 32, 64)
	dense("nw", tensor.BF16, 64)
	dense("nw32", tensor.F32, 64)
	dense("bias", tensor.BF16, 96)
	// several block iterations per lane, so the row kernel's load
	// batches (MatVecShape.Batch) run whole, with a remainder, and ragged
	// (80 and 200 blocks against 8, 16 and 32 lanes)
	quant("g80", 4, 64, 40, 32*80)
	quant("u80", 4, 64, 40, 32*80)
	quant("qa", 8, 32, 24, 32*200)
	quant("qb", 8, 32, 40, 32*200)
	quant("qc", 8, 32, 8, 32*200)
	dense("d80", tensor.F16, 24, 32*80)
	return f
}

func (f *fixture) upload(t *testing.T, b tensor.Backend) map[string]tensor.T {
	out := map[string]tensor.T{}
	for _, w := range f.ws {
		id, err := b.Upload(w)
		if err != nil {
			t.Fatal(err)
		}
		out[w.Name] = id
	}
	return out
}

func (f *fixture) randn(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(f.rng.NormFloat64())
	}
	return v
}

// TestFusions checks every fused kernel form, and the matrix-vector kernel
// at several row counts, against the cpu backend on the same graph.
func TestFusions(t *testing.T) {
	f := newFixture(t)
	x1, x3, x5, r96, r64 := f.randn(64), f.randn(3*64), f.randn(5*64), f.randn(96), f.randn(3*64)
	h3 := f.randn(3 * 128)
	// x small enough that float32 rounding over thousands of terms stays
	// well inside the tolerance; a wrong block would be off by ~0.1
	xw, xo, r24 := f.randn(14336), f.randn(32*241), f.randn(24)
	for i := range xw {
		xw[i] *= 0.1
	}
	for i := range xo {
		xo[i] *= 0.1
	}
	x80, x200 := f.randn(32*80), f.randn(32*200)
	for i := range x80 {
		x80[i] *= 0.1
	}
	for i := range x200 {
		x200[i] *= 0.1
	}
	type build func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T
	cases := []struct {
		name  string
		build build
	}{
		{"rms+group", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.RMSNorm(g.Input(x1, 1, 64), w["nw"], 1e-5, 0)
			return []tensor.T{g.MatMul(h, w["wq"]), g.MatMul(h, w["wk"]), g.MatMul(h, w["wv"])}
		}},
		{"f32-group", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.Input(x1, 1, 64)
			return []tensor.T{g.MatMul(h, w["wf32"]), g.MatMul(h, w["wf32b"]), g.MatMul(h, w["wf32c"])}
		}},
		{"f32-rms-group", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.RMSNorm(g.Input(x1, 1, 64), w["nw32"], 1e-5, 0)
			return []tensor.T{g.MatMul(h, w["wf32"]), g.MatMul(h, w["wf32b"]), g.MatMul(h, w["wf32c"])}
		}},
		{"embed-rms-group", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			x := g.Embed(w["wf32"], g.InputInts([]int32{3}, 1))
			h := g.RMSNorm(x, w["nw32"], 1e-5, 0)
			return []tensor.T{g.MatMul(h, w["wf32"]), g.MatMul(h, w["wf32b"]), g.MatMul(h, w["wf32c"])}
		}},
		{"rms-shift+group", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.RMSNorm(g.Input(x1, 1, 64), w["nw"], 1e-6, 1)
			return []tensor.T{g.MatMul(h, w["wq"]), g.MatMul(h, w["wbf"])}
		}},
		{"rms-noweight", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.RMSNorm(g.Input(x1, 1, 64), tensor.T{}, 1e-6, 0)
			return []tensor.T{g.MatMul(h, w["wf32"])}
		}},
		{"rms+dual", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.RMSNorm(g.Input(x1, 1, 64), w["nw"], 1e-5, 0)
			return []tensor.T{g.Mul(g.SiLU(g.MatMul(h, w["gate"])), g.MatMul(h, w["up"]))}
		}},
		{"dual-m3", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.Input(x3, 3, 64)
			return []tensor.T{g.Mul(g.MatMul(h, w["up"]), g.SiLU(g.MatMul(h, w["gate"])))}
		}},
		{"bias+residual", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			y := g.Add(g.MatMul(g.Input(x1, 1, 64), w["wq"]), w["bias"])
			return []tensor.T{g.Add(g.Input(r96, 1, 96), y)}
		}},
		{"residual-m3", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.Add(g.MatMul(g.Input(h3, 3, 128), w["down"]), g.Input(r64, 3, 64))}
		}},
		{"chunked+residual", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.Add(g.MatMul(g.Input(xw, 1, 14336), w["wide"]), g.Input(r24, 1, 24))}
		}},
		{"chunked-ragged", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.Input(xo, 1, 32*241), w["odd"])}
		}},
		// the column kernel folds an RMSNorm of any width: x in several
		// blocks per invocation, and a ragged last one. An eps of 0.99
		// against a mean square of about 0.01 keeps x near 0.1 (rounding
		// well inside the tolerance) while Σx² still moves every output
		// by about 0.5 %.
		{"rms-wide", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.RMSNorm(g.Input(xw, 1, 14336), tensor.T{}, 0.99, 0), w["wide"])}
		}},
		{"rms-odd", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.RMSNorm(g.Input(xo, 1, 32*241), tensor.T{}, 0.99, 0), w["odd"])}
		}},
		{"batch-rms+dual", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.RMSNorm(g.Input(x80, 1, 32*80), tensor.T{}, 0.99, 0)
			return []tensor.T{g.Mul(g.SiLU(g.MatMul(h, w["g80"])), g.MatMul(h, w["u80"]))}
		}},
		{"batch-dual", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.Input(x80, 1, 32*80)
			return []tensor.T{g.Mul(g.SiLU(g.MatMul(h, w["g80"])), g.MatMul(h, w["u80"]))}
		}},
		{"batch-group3", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.Input(x200, 1, 32*200)
			return []tensor.T{g.MatMul(h, w["qa"]), g.MatMul(h, w["qb"]), g.MatMul(h, w["qc"])}
		}},
		{"batch-dense", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.Input(x80, 1, 32*80), w["d80"])}
		}},
		{"rope-pair", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			// q and k of one layer: one dispatch; the rope of a rope must
			// not pair with its own input
			h := g.Input(x1, 1, 64)
			pos := g.InputInts([]int32{5}, 1)
			q := g.RoPE(g.Reshape(g.MatMul(h, w["wq"]), 1, 6, 16), pos, testRope)
			qq := g.RoPE(q, pos, testRope)
			k := g.RoPE(g.Reshape(g.MatMul(h, w["wk"]), 1, 2, 16), pos, testRope)
			return []tensor.T{q, qq, k}
		}},
		// a layer's q and k when decoding, rotated by the QKV kernel (the
		// roped k stored straight into its cache), and a biased projection
		// with traditional pairs
		{"rope-fold-decode", func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T {
			kc, _ := b.Alloc([]int{4, 2, 16})
			vc, _ := b.Alloc([]int{4, 2, 16})
			h := g.RMSNorm(g.Input(x1, 1, 64), w["nw"], 1e-5, 0)
			pos := g.InputInts([]int32{2}, 1)
			q := g.RoPE(g.Reshape(g.MatMul(h, w["wq"]), 1, 6, 16), pos, testRope)
			k := g.RoPE(g.Reshape(g.MatMul(h, w["wk"]), 1, 2, 16), pos, testRope)
			v := g.Reshape(g.MatMul(h, w["wv"]), 1, 2, 16)
			return []tensor.T{q, g.Store(kc, k, 2), g.Store(vc, v, 2)}
		}},
		{"rope-fold-bias-trad", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			y := g.Add(g.MatMul(g.Input(x1, 1, 64), w["wq"]), w["bias"])
			return []tensor.T{g.RoPE(g.Reshape(y, 1, 6, 16), g.InputInts([]int32{7}, 1), testRopeTrad)}
		}},
		{"group-m5", func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			x := g.Input(x5, 5, 64)
			return []tensor.T{g.MatMul(x, w["w3"]), g.MatMul(x, w["w5"]), g.MatMul(x, w["w6"])}
		}},
		{"store-fold", func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T {
			kv, err := b.Alloc([]int{4, 2, 16})
			if err != nil {
				t.Fatal(err)
			}
			h := g.RMSNorm(g.Input(x1, 1, 64), w["nw"], 1e-5, 0)
			v := g.Reshape(g.MatMul(h, w["wv"]), 1, 2, 16)
			k := g.Reshape(g.MatMul(h, w["wk"]), 1, 2, 16)
			kv = g.Store(kv, v, 2)
			kv = g.Store(kv, k, 3)
			return []tensor.T{kv, g.MatMul(h, w["wq"])}
		}},
		{"store-wrap", func(g *tensor.Graph, w map[string]tensor.T, b tensor.Backend) []tensor.T {
			// a chunk that wraps a ring is stored in two slices of one value
			kv, err := b.Alloc([]int{4, 2, 16})
			if err != nil {
				t.Fatal(err)
			}
			k := g.Reshape(g.MatMul(g.Input(x3[:2*64], 2, 64), w["wk"]), 2, 2, 16)
			kv = g.Store(kv, g.Slice(k, 0, 0, 1), 3)
			kv = g.Store(kv, g.Slice(k, 0, 1, 2), 0)
			return []tensor.T{kv}
		}},
	}
	ref := cpu.New(cpu.Options{Threads: 1})
	wr := f.upload(t, ref)
	for si, opt := range testShapes {
		b := newBackend(t, opt)
		wg := f.upload(t, b)
		if si == 1 {
			// the RoPE dispatches (a pair, one alone) as they run unfolded
			b.skip = fuseRopeMV
		}
		for _, tc := range cases {
			// the batch cases are for the row kernel; the column kernel
			// with three 8-bit weights of 6400 columns crashed lavapipe
			if opt.MatVec.Cols > 0 && strings.HasPrefix(tc.name, "batch-") {
				continue
			}
			t.Run(tc.name, func(t *testing.T) {
				want := run(t, ref, wr, tc.build)
				got := run(t, b, wg, tc.build)
				for o := range want {
					for i := range want[o] {
						if d := math.Abs(float64(got[o][i]-want[o][i])) / (1 + math.Abs(float64(want[o][i]))); !(d <= 1e-5) {
							t.Fatalf("output %d[%d] = %v, want %v", o, i, got[o][i], want[o][i])
						}
					}
				}
			})
		}
	}
}

func run(t *testing.T, b tensor.Backend, w map[string]tensor.T, build func(*tensor.Graph, map[string]tensor.T, tensor.Backend) []tensor.T) [][]float32 {
	g := tensor.NewGraph(b)
	outs := build(g, w, b)
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Run(context.Background(), g, outs...); err != nil {
		t.Fatalf("%s: %v", b.Name(), err)
	}
	var res [][]float32
	for _, o := range outs {
		v := make([]float32, tensor.Elements(g.Shape(o)))
		if err := b.Read(o, v); err != nil {
			t.Fatalf("%s: %v", b.Name(), err)
		}
		res = append(res, v)
	}
	return res
}

// testRope rotates the first 12 of 16 dimensions, the halves paired.
var testRope = &tensor.Rope{InvFreq: []float32{1, 0.5, 0.25, 0.125, 0.0625, 0.03125}, Dims: 12, Scale: 1}

// testRopeTrad rotates the first 12 of 16 dimensions in adjacent pairs.
var testRopeTrad = &tensor.Rope{InvFreq: []float32{1, 0.5, 0.25, 0.125, 0.0625, 0.03125}, Dims: 12, Scale: 1, Traditional: true}

// testShapes are the matrix-vector shapes the fusion test runs: row
// kernels (the last three with load batches), then column kernels (Cols). Lavapipe (Mesa 22.3) crashed on
// some graphs with rows 4 and lanes 16 or 64, so the wider shapes are
// exercised on real GPUs only (see docs/design/gpu.md).
var testShapes = []Options{{}, {MatVec: MatVecShape{Rows: 1, Lanes: 16}}, {MatVec: MatVecShape{Rows: 4, Lanes: 32}}, {MatVec: MatVecShape{Rows: 2, Lanes: 32}}, {MatVec: MatVecShape{Rows: 2, Lanes: 8}},
	{MatVec: MatVecShape{Rows: 2, Lanes: 16, Batch: 4}}, {MatVec: MatVecShape{Rows: 2, Lanes: 8, Batch: 8}}, {MatVec: MatVecShape{Rows: 4, Lanes: 32, Batch: 2}}, {MatVec: MatVecShape{Rows: 2, Iters: 1}}, {MatVec: MatVecShape{Rows: 1, Iters: 4, Batch: 2}},
	{MatVec: MatVecShape{Cols: 8}}, {MatVec: MatVecShape{Cols: 1, Threads: 64}}, {MatVec: MatVecShape{Cols: 16, Threads: 64}}, {MatVec: MatVecShape{Cols: 32, Threads: 128}},
	{MatVec: MatVecShape{Batch: 2}}}

// TestRopeFoldPlan checks that a decode step's q and k RoPEs run in the
// QKV kernel (TestFusions passes whether or not they fold), and that the
// folded tables keep a kernel within the storage bindings the device
// allows (a group made to fit 8 folds no table then).
func TestRopeFoldPlan(t *testing.T) {
	f := newFixture(t)
	x1 := f.randn(64)
	for _, most := range []uint32{0, 8} {
		b := newBackend(t, Options{})
		w := f.upload(t, b)
		if most > 0 {
			b.limits.MaxStorageBuffersPerShaderStage = most
		}
		g := tensor.NewGraph(b)
		h := g.RMSNorm(g.Input(x1, 1, 64), w["nw"], 1e-5, 0)
		pos := g.InputInts([]int32{2}, 1)
		q := g.RoPE(g.Reshape(g.MatMul(h, w["wq"]), 1, 6, 16), pos, testRope)
		k := g.RoPE(g.Reshape(g.MatMul(h, w["wk"]), 1, 2, 16), pos, testRope)
		v := g.Reshape(g.MatMul(h, w["wv"]), 1, 2, 16)
		outs := []tensor.T{q, k, v}
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
		p, err := b.compile(g, outs)
		if err != nil {
			t.Fatal(err)
		}
		roped := 0
		for _, kn := range p.kernels {
			if most == 0 && strings.HasPrefix(kn.label, "RoPE") {
				t.Errorf("limit %d: kernel %q: the RoPE did not fold", most, kn.label)
			}
			if strings.Contains(kn.label, " rope ") {
				roped++
			}
			if lim := b.limits.MaxStorageBuffersPerShaderStage; uint32(len(kn.ops)) > lim {
				t.Errorf("limit %d: kernel %q binds %d storage buffers", most, kn.label, len(kn.ops))
			}
		}
		if most == 0 && roped == 0 {
			t.Errorf("limit %d: no matvec kernel rotates", most)
		}
		p.release()
	}
}

// TestNormRowsPlan: MatVecShape.NormRows keeps a one-row RMSNorm out of
// the prologue of kernels with more output rows (it runs as its own
// kernel), with the same results.
func TestNormRowsPlan(t *testing.T) {
	f := newFixture(t)
	x1, x2 := f.randn(64), f.randn(64)
	var ref [][]float32
	// the group computes 160 rows, gate and up 128 (counted once); 0 is
	// the default
	for _, tc := range []struct{ normRows, folded int }{{0, 2}, {1000, 2}, {160, 2}, {159, 1}, {128, 1}, {127, 0}} {
		normRows := tc.normRows
		b := newBackend(t, Options{MatVec: MatVecShape{NormRows: normRows}})
		w := f.upload(t, b)
		build := func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			h := g.RMSNorm(g.Input(x1, 1, 64), w["nw"], 1e-5, 0)
			h2 := g.RMSNorm(g.Input(x2, 1, 64), w["nw"], 1e-5, 0)
			return []tensor.T{g.MatMul(h, w["wq"]), g.MatMul(h, w["wk"]), g.MatMul(h, w["wv"]),
				g.Mul(g.SiLU(g.MatMul(h2, w["gate"])), g.MatMul(h2, w["up"]))}
		}
		g := tensor.NewGraph(b)
		folded, norms := 0, 0
		for _, l := range planLabels(t, b, g, build(g, w, b)) {
			if strings.Contains(l, " rms") {
				folded++
			}
			if l == "RMSNorm" {
				norms++
			}
		}
		if folded != tc.folded || norms != 2-tc.folded {
			t.Errorf("NormRows %d: %d norms folded, %d norm kernels; want %d folded", normRows, folded, norms, tc.folded)
		}
		got := run(t, b, w, build)
		if ref == nil {
			ref = got
			continue
		}
		for o := range ref {
			for i := range ref[o] {
				if d := math.Abs(float64(got[o][i] - ref[o][i])); d > 1e-4*(1+math.Abs(float64(ref[o][i]))) {
					t.Fatalf("NormRows %d: output %d[%d] = %v, folded %v", normRows, o, i, got[o][i], ref[o][i])
				}
			}
		}
	}
}

// TestPerMatrixPlan: the default matrix-vector shape is fitted to each
// matrix (perMatrix), and a shape given is used for all of them.
func TestPerMatrixPlan(t *testing.T) {
	f := newFixture(t)
	b := newBackend(t, Options{})
	up := func(rows, cols int) tensor.T {
		w, err := weights.Quantize(make([]float32, rows*cols), rows, cols, tensor.Quant{Bits: 4, GroupSize: 64}, tensor.BF16)
		if err != nil {
			t.Fatal(err)
		}
		id, err := b.Upload(w)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	// an LM head; a down projection; an o_proj of 130 blocks a row (32
	// lanes leave at most 8 each) and 2096 rows (131 workgroups of 16
	// rows, enough only under a prologue: 64 lanes give 262), then the
	// same under a norm; a narrow o_proj (2 blocks a lane at 16 lanes,
	// but 32 workgroups: 64 lanes give 128, the most); gate and up as
	// wide as a down projection, which keep the row kernel
	head, down, oproj, narrow, gate, upw := up(65537, 64), up(64, 4160), up(2096, 4160), up(1024, 1024), up(64, 4160), up(64, 4160)
	x64, x1024, x4160 := f.randn(64), f.randn(1024), f.randn(4160)
	build := func(g *tensor.Graph) []tensor.T {
		// each its own x, so that none are grouped
		xg := g.Input(x4160, 1, 4160)
		return []tensor.T{g.MatMul(g.Input(x64, 1, 64), head), g.MatMul(g.Input(x4160, 1, 4160), down),
			g.MatMul(g.Input(x4160, 1, 4160), oproj), g.MatMul(g.RMSNorm(g.Input(x4160, 1, 4160), tensor.T{}, 1e-5, 0), oproj),
			g.MatMul(g.Input(x1024, 1, 1024), narrow), g.Mul(g.SiLU(g.MatMul(xg, gate)), g.MatMul(xg, upw))}
	}
	for _, tc := range []struct {
		shape MatVecShape
		want  []string
	}{
		{MatVecShape{}, []string{"k64 4x16", "k4160 c8x", "k4160 2x64", "k4160 rms 2x32", "k1024 2x64", "k4160 dual 2x64"}},
		// a load batch is not a shape: the matrices keep theirs
		{MatVecShape{Batch: 2}, []string{"k64 4x16", "k4160 c8x", "k4160 2x64", "k4160 rms 2x32", "k1024 2x64", "k4160 dual 2x64"}},
		{MatVecShape{Rows: 2, Iters: 8}, []string{"k64 2x16", "k4160 2x32", "k4160 2x32", "k4160 rms 2x32", "k1024 2x16", "k4160 dual 2x32"}},
	} {
		if err := b.SetMatVec(tc.shape); err != nil {
			t.Fatal(err)
		}
		g := tensor.NewGraph(b)
		var got []string
		for _, l := range planLabels(t, b, g, build(g)) {
			if strings.HasPrefix(l, "matvec") {
				got = append(got, l)
			}
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%+v: kernels %q, want %d matvecs", tc.shape, got, len(tc.want))
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%+v: kernel %d is %q, want %q in it", tc.shape, i, got[i], w)
			}
		}
	}
}

// planLabels compiles g's plan for outs and returns its kernels' labels
// in order.
func planLabels(t *testing.T, b *Backend, g *tensor.Graph, outs []tensor.T) []string {
	t.Helper()
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	p, err := b.compile(g, outs)
	if err != nil {
		t.Fatal(err)
	}
	defer p.release()
	labels := make([]string, len(p.kernels))
	for i, kn := range p.kernels {
		labels[i] = kn.label
	}
	return labels
}
