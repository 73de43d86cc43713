package main

import (
	"fmt"
	"strconv"
	"strings"

	"hearth/engine"
	"hearth/engine/bench"
)

// bench measures prefill and decode speed, time to first token, peak
// memory and decode against the machine's read-bandwidth bound, on a model
// or on a synthetic model of a real checkpoint's shape (engine/bench).
func (c *cli) bench(args []string) error {
	fs := c.flags("bench", "bench [flags]")
	model := fs.String("model", "", "a model (repo id in the cache, or a checkpoint directory)")
	synthetic := fs.String("synthetic", "", "a synthetic shape: "+strings.Join(bench.Shapes(), ", "))
	quant := fs.String("quant", "q4g64", "storage format of the synthetic model: "+strings.Join(bench.Quants(), ", "))
	threads := fs.Int("threads", 0, "CPU threads (0 = the default)")
	backend := fs.String("backend", "cpu", "auto, gpu or cpu")
	prompts := fs.String("prompts", "128,512,2048", "prefill lengths in tokens, comma-separated")
	decode := fs.Int("decode", 128, "decoded tokens timed")
	repeats := fs.Int("repeats", 3, "runs of each measurement (the report gives medians)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	int8 := fs.Bool("int8", false, "CPU: int8 activations for quantized matmuls (faster decode, not exact; docs/design/cpu.md)")
	profile := fs.Bool("profile", false, "GPU: add where one decode step's device time goes, by kind of kernel")
	unpipelined := fs.Bool("unpipelined", false, "GPU: read each decode step's token before queueing the next (to measure what running one step ahead gains)")
	cacheDir := fs.String("cache", "", "directory that keeps synthetic checkpoints between runs (default: a temporary one, removed)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opt := bench.Options{
		Synthetic: *synthetic, Quant: *quant, Decode: *decode, Repeats: *repeats, JSON: *asJSON, Profile: *profile,
		Engine:   engine.Options{Backend: *backend, Threads: *threads, Int8Activations: *int8, Unpipelined: *unpipelined},
		CacheDir: *cacheDir,
		Log:      c.stderr,
	}
	for _, p := range strings.Split(*prompts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return fmt.Errorf("bench: --prompts: %q is not a token count", p)
		}
		opt.Prompts = append(opt.Prompts, n)
	}
	switch {
	case (*model == "") == (*synthetic == ""):
		return fmt.Errorf("bench: give exactly one of --model and --synthetic")
	case *model != "":
		m, err := c.resolveModel(*model)
		if err != nil {
			return err
		}
		opt.Model = m.Dir
	}
	_, err := bench.Run(c.context(), opt, c.stdout)
	return err
}
