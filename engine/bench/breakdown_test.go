package bench

import (
	"context"
	"flag"
	"os"
	"slices"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/backend/cpu"
	"hearth/engine/checkpoint"
	"hearth/engine/family"
	"hearth/engine/tensor"
)

var (
	breakdownShape = flag.String("breakdown", "", "synthetic shape for TestDecodeBreakdown (skipped without it), e.g. llama-3.2-1b")
	breakdownQuant = flag.String("breakdown.quant", "q4g64", "quantization for TestDecodeBreakdown")
	breakdownInt8  = flag.Bool("breakdown.int8", false, "int8 activations in TestDecodeBreakdown")
	breakdownSteps = flag.Int("breakdown.steps", 64, "decode steps TestDecodeBreakdown profiles")
	breakdownThr   = flag.Int("breakdown.threads", 2, "threads in TestDecodeBreakdown")
)

// TestDecodeBreakdown profiles decode steps on the real path (engine.Load,
// Sequence.ForwardArgmax, as decode in bench.go runs them) with the CPU backend's
// per-node timer and prints where a step goes: time outside Backend.Run,
// per op and matmul shape (with each matmul's GB/s), the pool's loop tails
// and wake-ups, next to the streaming read at the same thread count. A
// diagnostic: it checks nothing but that the path runs.
//
//	go test ./engine/bench -run TestDecodeBreakdown -v -args \
//	    -breakdown=llama-3.2-1b -breakdown.int8 -synthcache=/tmp/hbcache
func TestDecodeBreakdown(t *testing.T) {
	if *breakdownShape == "" {
		t.Skip("no -breakdown shape")
	}
	opt, dir := breakdownModel(t)
	ck, err := checkpoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	rep.weightBytes(ck)
	prof := &cpu.Profile{}
	cpu.ProfileNextBackend(prof)
	m, err := engine.LoadCheckpoint(ck, opt.Engine)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	vocab := m.Checkpoint.Config.VocabSize
	n := *breakdownSteps
	seq, err := m.NewSequence(n + 9)
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	id, err := seq.ForwardArgmax(ctx, prompt(1, vocab))
	for i := 0; i < 8 && err == nil; i++ { // warm-up: plans, scratch, pages
		id, err = seq.ForwardArgmax(ctx, []int32{id})
	}
	if err != nil {
		t.Fatal(err)
	}
	bw := MeasureBandwidth(rep.WeightBytesPerToken, opt.Engine.Threads, 3)
	load := loadAvg()
	// Each step is profiled on its own; the breakdown adds up the faster
	// half, so a step that another process slowed down does not skew it.
	type stepProf struct {
		d    time.Duration
		prof cpu.Profile
	}
	profs := make([]stepProf, 0, n)
	steps := make([]float64, 0, n)
	var total time.Duration
	for i := 0; i < n; i++ {
		prof.Reset()
		start := time.Now()
		if id, err = seq.ForwardArgmax(ctx, []int32{id}); err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		total += d
		steps = append(steps, float64(d.Microseconds())/1000)
		var sp stepProf
		sp.d = d
		sp.prof.Add(prof)
		profs = append(profs, sp)
	}
	slices.SortFunc(profs, func(a, b stepProf) int { return int(a.d - b.d) })
	var fast cpu.Profile
	var fastTotal time.Duration
	for _, sp := range profs[:n/2] {
		fast.Add(&sp.prof)
		fastTotal += sp.d
	}
	bw2 := MeasureBandwidth(rep.WeightBytesPerToken, opt.Engine.Threads, 3)
	slices.Sort(steps)
	gbs := (bw.GBPerS + bw2.GBPerS) / 2
	boundMs := float64(rep.WeightBytesPerToken) / (gbs * 1e9) * 1000
	mean := total.Seconds() * 1000 / float64(n)
	t.Logf("%s %s int8=%v, %d threads, load %v → %v", *breakdownShape, *breakdownQuant, *breakdownInt8, opt.Engine.Threads, load, loadAvg())
	t.Logf("step ms: p10 %.2f, median %.2f, mean %.2f, p90 %.2f; the faster half: mean %.2f, outside Run %.0f µs/step",
		steps[n/10], steps[n/2], mean, steps[n*9/10], fastTotal.Seconds()*1000/float64(n/2), (fastTotal-fast.RunTime).Seconds()*1e6/float64(n/2))
	t.Logf("stream read %.1f / %.1f GB/s (before/after), %d MB/step: bound %.2f ms/step; p10 is %.0f%%, median %.0f%% of it",
		bw.GBPerS, bw2.GBPerS, rep.WeightBytesPerToken>>20, boundMs, 100*boundMs/steps[n/10], 100*boundMs/steps[n/2])
	fast.Write(os.Stdout)
}

// breakdownModel is the options of the -breakdown flags and the synthetic
// checkpoint they name (under -synthcache, or a temporary directory).
func breakdownModel(t *testing.T) (Options, string) {
	opt := Options{Synthetic: *breakdownShape, Quant: *breakdownQuant, CacheDir: *synthCache, Engine: engine.Options{Backend: "cpu", Threads: *breakdownThr, Int8Activations: *breakdownInt8}}.withDefaults()
	if opt.CacheDir == "" {
		opt.CacheDir = t.TempDir()
	}
	dir, err := opt.synthesize()
	if err != nil {
		t.Fatal(err)
	}
	return opt, dir
}

var breakdownAB = flag.Bool("breakdown.ab", false, "TestDecodeHugePagesAB: compare decode steps on huge-page weights (engine.Load) with mapped ones")

// TestDecodeHugePagesAB loads the -breakdown shape twice, through
// engine.Load (weights copied to huge pages on Linux) and mapped in place,
// and times decode steps on the two alternately in rounds, so both see the
// same load. A diagnostic: it checks nothing but that both run.
func TestDecodeHugePagesAB(t *testing.T) {
	if *breakdownShape == "" || !*breakdownAB {
		t.Skip("no -breakdown shape or no -breakdown.ab")
	}
	opt, dir := breakdownModel(t)
	m, err := engine.Load(dir, opt.Engine)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mapped := loadCPU(t, dir, cpu.Options{Threads: opt.Engine.Threads, Int8Activations: opt.Engine.Int8Activations})
	ctx := context.Background()
	const rounds, per = 12, 8
	seq, err := m.NewSequence(rounds*per + 2)
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	caches, err := mapped.impl.NewCaches(mapped.b, rounds*per+2, 512)
	if err != nil {
		t.Fatal(err)
	}
	step := func(id int32, pos int) {
		g := tensor.NewGraph(mapped.b)
		out, err := mapped.impl.Forward(g, &family.Batch{Tokens: []int32{id}, Pos: pos, Caches: caches})
		if err == nil {
			err = mapped.b.Run(ctx, g, out)
		}
		if err == nil {
			err = mapped.b.Read(out, make([]float32, tensor.Elements(g.Shape(out))))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var huge, mp []float64
	pos := 0
	for r := 0; r < rounds; r++ {
		for i := 0; i < per; i++ {
			start := time.Now()
			if _, err := seq.Forward(ctx, []int32{int32(pos + 1)}, false); err != nil {
				t.Fatal(err)
			}
			huge = append(huge, float64(time.Since(start).Microseconds())/1000)
		}
		time.Sleep(20 * time.Millisecond) // let the idle pool's workers park
		for i := 0; i < per; i++ {
			start := time.Now()
			step(int32(pos+i+1), pos+i)
			mp = append(mp, float64(time.Since(start).Microseconds())/1000)
		}
		pos += per
		time.Sleep(20 * time.Millisecond)
	}
	// the first round of each warms up
	huge, mp = huge[per:], mp[per:]
	slices.Sort(huge)
	slices.Sort(mp)
	q := func(s []float64, f float64) float64 { return s[int(f*float64(len(s)-1))] }
	t.Logf("load %v; step ms, huge pages: p10 %.2f, median %.2f; mapped: p10 %.2f, median %.2f; huge/mapped median %.3f",
		loadAvg(), q(huge, .1), q(huge, .5), q(mp, .1), q(mp, .5), q(huge, .5)/q(mp, .5))
}
