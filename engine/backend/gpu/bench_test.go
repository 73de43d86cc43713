package gpu_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"hearth/engine/backend/gpu"
	"hearth/engine/family"
	"hearth/engine/tensor"
	"hearth/engine/weights"
)

var (
	benchModels = flag.String("gpubench.models", "llama-3.2-1b,llama-3.1-8b", "synthetic shapes BenchmarkLlama runs (llama-3.2-1b, llama-3.1-8b, tiny)")
	benchAttn   = flag.String("gpubench.attn", "", "extra attention shapes for the decode benchmark, KxS: keys per value-loop iteration x vec4s of a key row loaded together when scoring, e.g. 8x8,4x32")
	benchShapes = flag.String("gpubench.shapes", "", "extra matvec shapes for the decode benchmark, e.g. 4x32,2x64 (row kernel: rows x lanes), c8x256 (column kernel: rows per workgroup x most threads)")
	benchFills  = flag.Int("gpubench.prefills", 3, "prefills timed per prefill benchmark, whatever b.N is (a prefill of the 8B shape takes about a second)")
	benchArgmax = flag.String("gpubench.argmax", "device", "where decode picks each token: device (the Argmax op; 4 bytes read back, as the engine does for plain greedy requests) or host (the logits read back and argmax'ed on the host)")
	benchBW     = flag.Float64("gpubench.bw", 4.3e12, "memory bandwidth in bytes/s that decode is compared with (H200: 4.3e12 measured copy, 4.8e12 datasheet)")
	benchGemm   = flag.String("gpubench.gemm", "", "extra gemm shapes for the prefill benchmark, e.g. simple,64x64x8x8p (gpu.ParseGemmShape)")
	benchPProf  = flag.Bool("gpubench.prefillprofile", false, "log a per-kernel profile of one prefill per prefill benchmark")
	benchDir    string // synthetic checkpoints, removed by TestMain
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// bench is one synthetic model loaded on the gpu backend, shared by the
// sub-benchmarks (loading the 8B shape takes seconds).
type bench struct {
	m         *model
	b         *gpu.Backend
	shape     llamaShape
	wBytes    int64 // bytes of weights one decoded token reads
	loadTime  time.Duration
	writeTime time.Duration
}

var benches = map[string]*bench{}

func loadBench(b *testing.B, s llamaShape) *bench {
	if m, ok := benches[s.Name]; ok {
		return m
	}
	g := newGPU(b, gpu.Options{})
	if benchDir == "" {
		d, err := os.MkdirTemp("", "hearth-gpubench")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	}
	dir := benchDir + "/" + s.Name
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := writeSynth(dir, s, 4); err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	m, err := load(dir, g)
	if err != nil {
		b.Fatal(err)
	}
	bn := &bench{m: m, b: g, shape: s, writeTime: t1.Sub(t0), loadTime: time.Since(t1)}
	// every tensor is read once per token, except the embedding table of
	// an untied model (one row)
	set, err := weights.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range set.Names() {
		info, _ := set.Info(name)
		if !s.Tied && strings.HasPrefix(name, "model.embed_tokens.") {
			continue
		}
		bn.wBytes += info.Length
	}
	set.Close()
	benches[s.Name] = bn
	b.Logf("%s: wrote the synthetic checkpoint in %v, loaded it in %v; a token reads %.2f GB of weights", s.Name, bn.writeTime.Round(time.Millisecond), bn.loadTime.Round(time.Millisecond), float64(bn.wBytes)/1e9)
	return bn
}

// kvBytes is the KV cache a decode step reads at context n (float32).
func (bn *bench) kvBytes(n int) int64 {
	s := bn.shape
	return int64(2*s.Layers*s.KVHeads*s.HeadDim*4) * int64(n)
}

func prompt(n, vocab int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32((i*7919 + 13) % vocab)
	}
	return p
}

// BenchmarkLlama measures prefill and decode of synthetic Llama-3.2-1B and
// Llama-3.1-8B shapes with 4-bit MLX weights (group 64, BF16 scales), the
// way engine.Sequence runs them (chunks of 512; each decode step's token
// picked by the Argmax op on the device and read back alone, or with
// -gpubench.argmax=host the logits read back and argmax'ed on the host).
// Prefill reports tok/s, TFLOP/s (llamaShape.prefillFLOPs) and that as a
// percentage of the device's float32 FMA rate (Backend.FMARate, measured
// once per backend); -gpubench.gemm adds prefills with other GemmShapes
// (simple: the kernel before the tiled one), and -gpubench.prefillprofile
// prints a per-kernel profile of one prefill with the gemm kernels' rate.
// Decode reports tok/s; per token the host time spent recording the graph,
// in Run (plan lookup, input and parameter upload, encoding, submit),
// waiting in Read and picking the token (the host argmax, or reading the
// id); the device-bound time per token (16
// steps submitted back to back, one read); and tok/s and device-bound time
// as a percentage of the memory-bandwidth bound (weights + KV bytes per
// token over -gpubench.bw). The first decode run also logs a per-kernel
// profile.
//
//	go test -run '^$' -bench Llama -benchtime 64x ./engine/backend/gpu/
func BenchmarkLlama(b *testing.B) {
	for _, name := range strings.Split(*benchModels, ",") {
		s, ok := map[string]llamaShape{llama1B.Name: llama1B, llama8B.Name: llama8B, llamaTiny.Name: llamaTiny}[name]
		if !ok {
			b.Fatalf("unknown -gpubench.models entry %q", name)
		}
		b.Run(s.Name, func(b *testing.B) {
			b.Run("prefill512", func(b *testing.B) { benchPrefill(b, loadBench(b, s), 512) })
			if *benchGemm != "" {
				for _, f := range strings.Split(*benchGemm, ",") {
					sh, err := gpu.ParseGemmShape(f)
					if err != nil {
						b.Fatal(err)
					}
					b.Run("prefill512-"+f, func(b *testing.B) {
						bn := loadBench(b, s)
						if err := bn.b.SetGemm(sh); err != nil {
							b.Fatal(err)
						}
						defer bn.b.SetGemm(gpu.GemmShape{})
						benchPrefill(b, bn, 512)
					})
				}
			}
			shapes, labels := []gpu.MatVecShape{{}}, []string{"decode"}
			if *benchShapes != "" {
				for _, f := range strings.Split(*benchShapes, ",") {
					sh, err := gpu.ParseMatVecShape(f)
					if err != nil {
						b.Fatal(err)
					}
					shapes, labels = append(shapes, sh), append(labels, "decode-"+f)
				}
			}
			for i, sh := range shapes {
				label := labels[i]
				b.Run(label, func(b *testing.B) {
					bn := loadBench(b, s)
					if err := bn.b.SetMatVec(sh); err != nil {
						b.Fatal(err)
					}
					defer bn.b.SetMatVec(gpu.MatVecShape{})
					benchDecode(b, bn, 512)
				})
			}
			if *benchAttn == "" {
				return
			}
			for _, f := range strings.Split(*benchAttn, ",") {
				var a gpu.AttnShape
				if n, err := fmt.Sscanf(f, "%dx%d", &a.Keys, &a.Score); n != 2 || err != nil {
					b.Fatalf("-gpubench.attn entry %q: want KxS", f)
				}
				b.Run("decode-attn"+f, func(b *testing.B) {
					bn := loadBench(b, s)
					if err := bn.b.SetAttention(a); err != nil {
						b.Fatal(err)
					}
					defer bn.b.SetAttention(gpu.AttnShape{})
					benchDecode(b, bn, 512)
				})
			}
		})
	}
}

func benchPrefill(b *testing.B, bn *bench, n int) {
	ctx := context.Background()
	toks := prompt(n, bn.shape.Vocab)
	warm, err := bn.m.newSeq(n+8, 512)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := warm.forward(ctx, toks); err != nil { // compile the plan
		b.Fatal(err)
	}
	warm.close()
	iters := min(b.N, *benchFills)
	var elapsed time.Duration
	for i := 0; i < iters; i++ {
		s, err := bn.m.newSeq(n+8, 512)
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if _, err := s.forward(ctx, toks); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(t0)
		s.close()
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(iters), "ns/op")
	b.ReportMetric(float64(n*iters)/elapsed.Seconds(), "tok/s")
	flops := bn.shape.prefillFLOPs(n)
	rate := flops * float64(iters) / elapsed.Seconds()
	b.ReportMetric(rate/1e12, "TFLOP/s")
	peak := fmaRate(b, bn.b)
	if peak > 0 {
		b.ReportMetric(100*rate/peak, "%fma")
	}
	if !*benchPProf || bn.b.SetProfile(true) != nil {
		return
	}
	defer bn.b.SetProfile(false)
	s, err := bn.m.newSeq(n+8, 512)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	if _, err := s.forward(ctx, toks); err != nil {
		b.Fatal(err)
	}
	prof, err := bn.b.LastProfile()
	if err != nil {
		b.Fatal(err)
	}
	var total, mm time.Duration
	var sb strings.Builder
	for _, k := range prof {
		total += k.Time
		if strings.HasPrefix(k.Label, "gemm ") {
			mm += k.Time
		}
	}
	// the layers' matrix products (the LM head, one row, is a matvec)
	mmFlops := bn.shape.layerMatMulFLOPs(n)
	fmt.Fprintf(&sb, "%s prefill %d profile (each kernel in its own pass): %v device time, %.3g TFLOP/s; gemm kernels %v, %.3g TFLOP/s",
		bn.shape.Name, n, total, flops/total.Seconds()/1e12, mm, mmFlops/mm.Seconds()/1e12)
	if peak > 0 {
		fmt.Fprintf(&sb, " = %.1f%% of the f32 FMA rate (%.3g TFLOP/s)", 100*mmFlops/mm.Seconds()/peak, peak/1e12)
	}
	sb.WriteString("\n")
	for _, k := range prof {
		fmt.Fprintf(&sb, "  %-44s %4d× %9v %5.1f%%\n", k.Label, k.Count, k.Time, 100*float64(k.Time)/float64(total))
	}
	fmt.Print(sb.String()) // b.Log keeps 10 lines of a benchmark's output
}

// fmaRates caches each backend's measured float32 FMA rate.
var fmaRates = map[*gpu.Backend]float64{}

// fmaRate is the device's float32 fused multiply-add rate in FLOP/s (the
// best of 5 passes of 1e11 FLOP; 1e8 on an emulated adapter), measured
// once per backend and logged; 0 when it cannot be measured.
func fmaRate(b *testing.B, g *gpu.Backend) float64 {
	if r, ok := fmaRates[g]; ok {
		return r
	}
	flops := 1e11
	if g.Adapter().Emulated {
		flops = 1e8
	}
	rates, err := g.FMARate(flops, 5)
	best := 0.0
	for _, r := range rates {
		best = max(best, r)
	}
	if err != nil {
		b.Logf("f32 FMA rate: %v", err)
	} else {
		b.Logf("f32 FMA rate on %s: %.2f TFLOP/s (best of %d passes: %.2f)", g.Adapter().Name, best/1e12, len(rates), rates)
	}
	fmaRates[g] = best
	return best
}

func benchDecode(b *testing.B, bn *bench, ctxTokens int) {
	ctx := context.Background()
	s, err := bn.m.newSeq(ctxTokens+b.N+64, 512)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	logits, err := s.forward(ctx, prompt(ctxTokens, bn.shape.Vocab))
	if err != nil {
		b.Fatal(err)
	}
	// step records a decode step and the value Read takes: the logits, or
	// with the device argmax the token id alone
	onDevice := *benchArgmax == "device"
	if !onDevice && *benchArgmax != "host" {
		b.Fatalf("-gpubench.argmax=%q: want device or host", *benchArgmax)
	}
	out := logits
	if onDevice {
		out = make([]float32, 1)
	}
	step := func(tokens []int32) (*tensor.Graph, tensor.T, error) {
		g, l, err := s.graph(tokens)
		if err == nil && onDevice {
			l = g.Argmax(l)
			err = g.Err()
		}
		return g, l, err
	}
	pick := func() int32 {
		if onDevice {
			return int32(out[0])
		}
		return argmax(logits)
	}
	tok := argmax(logits)
	// decode runs one step on tok and picks the next, returning the time
	// at its start and after recording, Run and Read
	decode := func() (tg, t0, t1, t2 time.Time) {
		tg = time.Now()
		g, l, err := step([]int32{tok})
		if err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		if err := bn.m.b.Run(ctx, g, l); err != nil {
			b.Fatal(err)
		}
		t1 = time.Now()
		if err := bn.m.b.Read(l, out); err != nil {
			b.Fatal(err)
		}
		t2 = time.Now()
		tok = pick()
		return tg, t0, t1, t2
	}
	for i := 0; i < 4; i++ { // compile and warm the decode plan
		decode()
	}
	startLen := s.len()
	var graphTime, runTime, readTime, pickTime time.Duration
	var phases gpu.RunTimes
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tg, t0, t1, t2 := decode()
		pickTime += time.Since(t2)
		graphTime += t0.Sub(tg)
		runTime += t1.Sub(t0)
		readTime += t2.Sub(t1)
		rt := bn.b.LastRunTimes()
		phases.Plan += rt.Plan
		phases.Upload += rt.Upload
		phases.Submit += rt.Submit
		phases.Encode += rt.Encode
	}
	b.StopTimer()
	per := b.Elapsed().Seconds() / float64(b.N)
	bytes := float64(bn.wBytes + bn.kvBytes(startLen+b.N/2))
	// device-bound time: the same step submitted 16 times, one read
	const reps = 16
	g, l, err := step([]int32{tok})
	if err != nil {
		b.Fatal(err)
	}
	s.trim(1)
	t0 := time.Now()
	for i := 0; i < reps; i++ {
		if err := bn.m.b.Run(ctx, g, l); err != nil {
			b.Fatal(err)
		}
	}
	if err := bn.m.b.Read(l, out); err != nil {
		b.Fatal(err)
	}
	dev := time.Since(t0).Seconds() / reps
	b.ReportMetric(1/per, "tok/s")
	b.ReportMetric(per*1e3, "ms/tok")
	b.ReportMetric(float64(runTime.Microseconds())/float64(b.N), "host-µs/tok")
	b.ReportMetric(float64(readTime.Microseconds())/float64(b.N), "wait-µs/tok")
	b.ReportMetric(float64(graphTime.Microseconds())/float64(b.N), "graph-µs/tok")
	b.ReportMetric(float64(pickTime.Microseconds())/float64(b.N), "argmax-µs/tok")
	n := time.Duration(b.N)
	b.Logf("argmax on the %s; host per token in Run: plan %v, upload %v, submit %v, encoding the next step %v (overlapped)",
		*benchArgmax, phases.Plan/n, phases.Upload/n, phases.Submit/n, phases.Encode/n)
	b.ReportMetric(100*bytes / *benchBW / per, "%bw")
	b.ReportMetric(dev*1e3, "dev-ms/tok")
	b.ReportMetric(100*bytes / *benchBW / dev, "%bw-dev")
	if err := bn.b.SetProfile(true); err == nil {
		g, l, _ := step([]int32{tok})
		s.trim(1)
		if err := bn.m.b.Run(ctx, g, l); err == nil {
			if prof, err := bn.b.LastProfile(); err == nil {
				logProfile(b, bn, prof, bytes)
			}
		}
		bn.b.SetProfile(false)
	}
}

func logProfile(b *testing.B, bn *bench, prof []gpu.KernelTime, bytes float64) {
	var total time.Duration
	for _, k := range prof {
		total += k.Time
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s decode profile (each kernel in its own pass): %v device time, %.0f%% of the bandwidth bound\n", bn.shape.Name, total, 100*bytes / *benchBW / total.Seconds())
	sort.SliceStable(prof, func(i, j int) bool { return prof[i].Time > prof[j].Time })
	for _, k := range prof {
		fmt.Fprintf(&sb, "  %-40s %4d× %9v %5.1f%%\n", k.Label, k.Count, k.Time, 100*float64(k.Time)/float64(total))
	}
	b.Log(sb.String())
}

// graph records one decode step without running it; the sequence grows
// by the tokens (trim to undo).
func (s *seq) graph(tokens []int32) (*tensor.Graph, tensor.T, error) {
	g := tensor.NewGraph(s.m.b)
	l, err := s.m.impl.Forward(g, &family.Batch{Tokens: tokens, Pos: s.len(), Caches: s.caches})
	return g, l, err
}

func TestParseMatVecShape(t *testing.T) {
	for f, want := range map[string]gpu.MatVecShape{
		"2x16": {Rows: 2, Lanes: 16}, "4x16b2": {Rows: 4, Lanes: 16, Batch: 2}, "c8x256": {Cols: 8, Threads: 256},
		"2xi8": {Rows: 2, Iters: 8}, "1xi4b2": {Rows: 1, Iters: 4, Batch: 2},
		"2xi8n8192": {Rows: 2, Iters: 8, NormRows: 8192}, "2x16b1n100": {Rows: 2, Lanes: 16, Batch: 1, NormRows: 100}, "n200000": {NormRows: 200000}, "b2": {Batch: 2}, "b4n100": {Batch: 4, NormRows: 100},
	} {
		if got, err := gpu.ParseMatVecShape(f); err != nil || got != want {
			t.Errorf("ParseMatVecShape(%q) = %+v, %v; want %+v", f, got, err, want)
		}
	}
	for _, f := range []string{"", "2x", "2x16b", "2x16c4", "c8", "x16", "2xi", "2xi-1", "2x16p", "2xi8b", "c8x256b2", "3x16", "2x16b3", "2x16n", "2x16n8b2", "c8x256n8", "n", "n8x", "b", "b3", "bn", "n8b2"} {
		if got, err := gpu.ParseMatVecShape(f); err == nil {
			t.Errorf("ParseMatVecShape(%q) = %+v, want an error", f, got)
		}
	}
}
