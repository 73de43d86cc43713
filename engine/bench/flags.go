package bench

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"hearth/engine"
	"hearth/engine/tensor"
)

// Flags registers `hearth bench`'s measurement flags (all but --model,
// which each front end resolves its own way) on fs, and returns what
// turns them, once parsed, into Options logging to log.
func Flags(fs *flag.FlagSet) func(log io.Writer) (Options, error) {
	synthetic := fs.String("synthetic", "", "a synthetic shape: "+strings.Join(Shapes(), ", "))
	quant := fs.String("quant", "q4g64", "storage format of the synthetic model: "+strings.Join(Quants(), ", "))
	threads := fs.Int("threads", 0, "CPU threads (0 = the default)")
	backend := fs.String("backend", "cpu", "auto, gpu or cpu")
	prompts := fs.String("prompts", "128,512,2048", "prefill lengths in tokens, comma-separated")
	decode := fs.Int("decode", 128, "decoded tokens timed")
	decodeCtx := fs.Int("decode-ctx", 0, "prefill this many tokens (untimed) before the timed decode, to decode at a long context (0 = from one token)")
	repeats := fs.Int("repeats", 3, "runs of each measurement (the report gives medians)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	int8 := fs.Bool("int8", false, "CPU: int8 activations for quantized matmuls (faster decode, not exact; docs/design/cpu.md)")
	profile := fs.Bool("profile", false, "GPU: add where one decode step's device time goes, by kind of kernel")
	unpipelined := fs.Bool("unpipelined", false, "GPU: read each decode step's token before queueing the next (to measure what running one step ahead gains)")
	concurrency := fs.String("concurrency", "", "also decode this many streams at once, batched (continuous batching), comma-separated, e.g. 1,4,16: aggregate and per-stream tokens/s (1 is always measured, the baseline)")
	kv := fs.String("kv", "f32", "KV cache type: f32, q8 or q4 (docs/design/kv-quant.md)")
	cacheDir := fs.String("cache", "", "directory that keeps synthetic checkpoints between runs (default: a temporary one, removed)")
	return func(log io.Writer) (Options, error) {
		opt := Options{
			Synthetic: *synthetic, Quant: *quant, Decode: *decode, DecodeContext: *decodeCtx, Repeats: *repeats, JSON: *asJSON, Profile: *profile,
			Engine:   engine.Options{Backend: *backend, Threads: *threads, Int8Activations: *int8, Unpipelined: *unpipelined},
			CacheDir: *cacheDir,
			Log:      log,
		}
		if *decodeCtx < 0 {
			return opt, fmt.Errorf("--decode-ctx %d: must not be negative", *decodeCtx)
		}
		var err error
		if opt.Engine.KV, err = tensor.ParseKVType(*kv); err != nil {
			return opt, fmt.Errorf("--kv: %w", err)
		}
		if opt.Prompts, err = parseCounts("prompts", *prompts, "token"); err != nil {
			return opt, err
		}
		opt.Concurrency, err = parseCounts("concurrency", *concurrency, "stream")
		return opt, err
	}
}
