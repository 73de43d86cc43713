package gpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
	"hearth/engine/weights"
)

// TestGemm runs many-row MatMuls of every weight kind against the cpu
// backend with the tiled kernel at several shapes: x rows and weight rows
// that leave ragged tiles (37, 130; 200), two k slices and more, split
// weights, node weights, and a width that is not a multiple of 32 (the
// simple kernel).
func TestGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	randn := func(n int, sd float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * sd)
		}
		return v
	}
	var ws []tensor.Weight
	quant := func(name string, bits, group int, sdt tensor.DType, rows, cols int) {
		w, err := weights.Quantize(randn(rows*cols, 0.2), rows, cols, tensor.Quant{Bits: bits, GroupSize: group}, sdt)
		if err != nil {
			t.Fatal(err)
		}
		w.Name = name
		ws = append(ws, w)
	}
	dense := func(name string, dt tensor.DType, rows, cols int) {
		v := randn(rows*cols, 0.2)
		data := make([]byte, len(v)*dt.Size())
		for i, f := range v {
			switch dt {
			case tensor.F32:
				binary.LittleEndian.PutUint32(data[i*4:], math.Float32bits(f))
			case tensor.F16:
				binary.LittleEndian.PutUint16(data[i*2:], tensor.FloatToHalf(f))
			case tensor.BF16:
				binary.LittleEndian.PutUint16(data[i*2:], tensor.FloatToBF16(f))
			}
		}
		ws = append(ws, tensor.Weight{Name: name, DType: dt, Shape: []int{rows, cols}, Data: data})
	}
	quant("q4g64", 4, 64, tensor.BF16, 200, 192)
	quant("q4g32f16", 4, 32, tensor.F16, 200, 96)
	quant("q8g32f32", 8, 32, tensor.F32, 200, 160)
	quant("q8g128", 8, 128, tensor.BF16, 72, 256)
	quant("q2g64", 2, 64, tensor.BF16, 200, 128)
	quant("q3g32", 3, 32, tensor.BF16, 40, 96)
	quant("q5g64", 5, 64, tensor.BF16, 40, 128)
	quant("q6g32", 6, 32, tensor.F16, 40, 96)
	dense("bf16", tensor.BF16, 200, 96)
	dense("f16", tensor.F16, 136, 64)
	dense("f32", tensor.F32, 200, 96)
	dense("f32odd", tensor.F32, 50, 40)
	x := randn(130*256, 1)
	type tc struct {
		w    string
		m, k int
	}
	cases := []tc{{"q4g64", 130, 192}, {"q4g64", 37, 192}, {"q4g32f16", 130, 96}, {"q8g32f32", 37, 160},
		{"q8g128", 130, 256}, {"q2g64", 37, 128}, {"q3g32", 20, 96}, {"q5g64", 20, 128}, {"q6g32", 20, 96},
		{"bf16", 130, 96}, {"f16", 70, 64}, {"f32", 37, 96}, {"f32odd", 20, 40}}
	build := func(c tc) func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
		return func(g *tensor.Graph, w map[string]tensor.T, _ tensor.Backend) []tensor.T {
			return []tensor.T{g.MatMul(g.Input(x[:c.m*c.k], c.m, c.k), w[c.w])}
		}
	}
	// a node as the weight: x (130 × 64) times itself transposed
	node := func(g *tensor.Graph, _ map[string]tensor.T, _ tensor.Backend) []tensor.T {
		a := g.Input(x[:130*64], 130, 64)
		return []tensor.T{g.MatMul(a, g.Scale(a, 0.5))}
	}
	ref := cpu.New(cpu.Options{})
	upload := func(b tensor.Backend) map[string]tensor.T {
		out := map[string]tensor.T{}
		for _, w := range ws {
			id, err := b.Upload(w)
			if err != nil {
				t.Fatal(err)
			}
			out[w.Name] = id
		}
		return out
	}
	wr := upload(ref)
	for _, opt := range []Options{{}, {Gemm: GemmShape{M: 64, N: 64, TM: 8, TN: 8, Prefetch: true}}, {Gemm: GemmShape{M: 32, N: 64, TM: 4, TN: 8}},
		{Gemm: GemmShape{M: 128, N: 128, TM: 8, TN: 8}},
		{Gemm: GemmShape{M: 128, N: 128, TM: 8, TN: 8, Prefetch: true, Fit: true}}, {WeightBlockBytes: 2048}, {Gemm: GemmShape{Simple: true}}} {
		b := newBackend(t, opt)
		wg := upload(b)
		name := b.gemm.String()
		if opt.WeightBlockBytes > 0 {
			name += "-split"
		}
		t.Run(name, func(t *testing.T) {
			for i, c := range cases {
				if opt != (Options{}) && i%4 != 0 { // the others on a sample of the kinds
					continue
				}
				largeCase(t, c.w+"-"+strconv.Itoa(c.m), ref, b, wr, wg, build(c))
			}
			largeCase(t, "node", ref, b, wr, wg, node)
			// the shape asked for ran (and did not fall back to the
			// simple kernel for want of workgroup memory)
			ran, want := false, " "+b.gemm.String()+" "
			if b.gemm.Fit { // a shape fitted to the matrix
				want = "f "
			}
			for _, p := range b.plans {
				for _, k := range p.kernels {
					ran = ran || strings.HasPrefix(k.label, "gemm ") && strings.Contains(k.label, want)
				}
			}
			if !ran && !b.gemm.Simple {
				t.Errorf("no kernel of shape %v ran", b.gemm)
			}
		})
	}
}

func TestParseGemmShape(t *testing.T) {
	for f, want := range map[string]GemmShape{
		"simple": {Simple: true}, "64x128x8x8": {M: 64, N: 128, TM: 8, TN: 8}, "64x64x8x8p": {M: 64, N: 64, TM: 8, TN: 8, Prefetch: true},
		"32x64x4x8": {M: 32, N: 64, TM: 4, TN: 8}, "128x128x8x8": {M: 128, N: 128, TM: 8, TN: 8},
		"128x128x8x8pf": {M: 128, N: 128, TM: 8, TN: 8, Prefetch: true, Fit: true}, "64x64x8x8f": {M: 64, N: 64, TM: 8, TN: 8, Fit: true},
	} {
		got, err := ParseGemmShape(f)
		if err != nil || got != want {
			t.Errorf("ParseGemmShape(%q) = %+v, %v; want %+v", f, got, err, want)
		}
		if got.String() != f {
			t.Errorf("%+v prints as %q, want %q", got, got.String(), f)
		}
	}
	for _, f := range []string{"", "p", "64x128", "64x128x8x8x8", "64x128x8x3", "64x128x16x8", "32x128x8x8", "64x96x8x8", "8x8x1x1", "64x128x8x8q", "0x128x8x8", "256x256x8x8", "64x128x8x8fp"} {
		if got, err := ParseGemmShape(f); err == nil {
			t.Errorf("ParseGemmShape(%q) = %+v, want an error", f, got)
		}
	}
	for _, c := range []struct {
		s       string
		m, rows int
		want    string
	}{
		{"128x128x8x8pf", 512, 14336, "128x128x8x8pf"}, {"128x128x8x8pf", 512, 4096, "64x64x8x8pf"}, {"128x128x8x8pf", 1024, 4096, "128x64x8x8pf"},
		{"128x128x8x8f", 512, 2048, "64x64x8x8f"}, {"128x128x8x8f", 512, 512, "64x64x8x8f"},
		{"128x128x8x8", 512, 512, "128x128x8x8"}, {"64x128x8x8f", 20, 200, "64x64x8x8f"},
	} {
		s, err := ParseGemmShape(c.s)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.fit(c.m, c.rows).String(); got != c.want {
			t.Errorf("%s fitted to %d × %d: %s, want %s", c.s, c.m, c.rows, got, c.want)
		}
	}
	if got := (GemmShape{}).withDefaults(); got != defaultGemm {
		t.Errorf("zero shape's defaults %v, want %v", got, defaultGemm)
	}
}

func TestFMARate(t *testing.T) {
	b := newBackend(t, Options{})
	rates, err := b.FMARate(1e8, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rates) != 2 || rates[0] <= 0 || rates[1] <= 0 {
		t.Fatalf("rates %v, want two positive", rates)
	}
	if _, err := b.FMARate(0, 1); err == nil {
		t.Error("0 FLOP was accepted")
	}
}
