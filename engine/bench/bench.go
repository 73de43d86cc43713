// Package bench measures a model on the engine's real path (engine.Load,
// Sequence.Forward): prefill tokens/s at several prompt lengths, time to
// first token, decode tokens/s, peak RSS, and decode as a fraction of the
// memory-bandwidth bound, which it measures too with a streaming-read
// microbenchmark. With a synthetic shape it first writes a random-weight
// checkpoint with a real model's exact shapes and storage format, so
// performance work needs no download. `hearth bench` is a flag set over Run.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"hearth/engine"
	"hearth/engine/backend/cpu"
	"hearth/engine/checkpoint"
	"hearth/engine/sample"
)

// Options say what to measure. The zero value of every field but one of
// Model and Synthetic is a sensible default.
type Options struct {
	// Model is a checkpoint directory. Exactly one of Model and Synthetic
	// is set.
	Model string
	// Synthetic names a shape (Shapes lists them) to build with random
	// weights in the storage format Quant (Quants lists them; default
	// q4g64).
	Synthetic string
	Quant     string
	// CacheDir keeps synthetic checkpoints between runs (one directory per
	// shape and format, reused when complete). Empty means a temporary
	// directory removed when Run returns.
	CacheDir string

	// Engine is passed to engine.Load (backend, threads, and whatever else
	// the engine takes).
	Engine engine.Options

	// Prompts are the prefill lengths in tokens (default 128, 512, 2048).
	Prompts []int
	// Decode is the number of decoded tokens timed (default 128), from an
	// empty context after one untimed token.
	Decode int
	// DecodeContext, when positive, is the prompt prefilled (untimed)
	// before the timed decode, so decode runs at a long context (where a
	// KV cache's type shows); 0 decodes from one token.
	DecodeContext int
	// Repeats is how many times each measurement runs; the report gives
	// medians (default 3).
	Repeats int
	// BandwidthBytes is the streaming-read buffer. The default is the
	// bytes one decode step reads (at least 64 MiB): the bound then sees
	// the same working set as decode, caches included (a model smaller
	// than the last-level cache is bounded by the cache's bandwidth).
	BandwidthBytes int64

	// Concurrency lists stream counts to decode at once, batched
	// (BatchedReport); none by default.
	Concurrency []int

	// Profile adds where one decode step's device time goes, kernel by
	// kind of kernel (a backend that times its kernels: the GPU).
	Profile bool

	// JSON prints the report as one JSON object instead of a table.
	JSON bool
	// Log receives progress lines (nil: none).
	Log io.Writer
}

func (o Options) withDefaults() Options {
	if o.Quant == "" {
		o.Quant = "q4g64"
	}
	if len(o.Prompts) == 0 {
		o.Prompts = []int{128, 512, 2048}
	}
	if o.Decode <= 0 {
		o.Decode = 128
	}
	if o.Repeats <= 0 {
		o.Repeats = 3
	}
	if o.Engine.Threads <= 0 {
		o.Engine.Threads = cpu.DefaultThreads()
	}
	return o
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// Run measures the model opt names and writes the report to w (a table, or
// JSON with opt.JSON).
func Run(ctx context.Context, opt Options, w io.Writer) (*Report, error) {
	opt = opt.withDefaults()
	if (opt.Model == "") == (opt.Synthetic == "") {
		return nil, errors.New("bench: name a model directory or a synthetic shape (not both)")
	}
	for _, p := range opt.Prompts {
		if p <= 0 {
			return nil, fmt.Errorf("bench: prompt length %d is not positive", p)
		}
	}
	rep := &Report{Date: time.Now().UTC().Format(time.RFC3339), Threads: opt.Engine.Threads, Decode: opt.Decode, DecodeContext: opt.DecodeContext, Repeats: opt.Repeats}
	rep.init()
	rep.Engine = opt.Engine
	rep.Machine = describeMachine()
	dir := opt.Model
	if opt.Synthetic != "" {
		var err error
		if dir, err = opt.synthesize(); err != nil {
			return nil, err
		}
		if opt.CacheDir == "" {
			defer os.RemoveAll(filepath.Dir(dir))
		}
		rep.Model, rep.Synthetic, rep.Quant = opt.Synthetic, true, opt.Quant
	} else {
		rep.Model = dir
	}
	ck, err := checkpoint.Read(dir)
	if err != nil {
		return nil, fmt.Errorf("bench %s: %w", dir, err)
	}
	rep.weightBytes(ck)

	if opt.BandwidthBytes <= 0 {
		opt.BandwidthBytes = max(rep.WeightBytesPerToken, 64<<20)
	}
	rss := startRSS()
	err = rep.measure(ctx, ck, opt, rss)
	rep.PeakRSSBytes = rss.finish()
	if err != nil {
		return nil, fmt.Errorf("bench %s: %w", rep.Model, err)
	}
	rep.Machine.LoadEnd = loadAvg()
	rep.finish()
	if opt.JSON {
		err = rep.WriteJSON(w)
	} else {
		err = rep.WriteTable(w)
	}
	return rep, err
}

// synthesize builds (or finds) the synthetic checkpoint and returns its
// directory.
func (o Options) synthesize() (string, error) {
	if _, err := lookupShape(o.Synthetic); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if _, err := lookupQuant(o.Quant); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	root := o.CacheDir
	if root == "" {
		tmp, err := os.MkdirTemp("", "hearth-bench-")
		if err != nil {
			return "", err
		}
		root = tmp
	}
	dir := filepath.Join(root, o.Synthetic+"-"+o.Quant)
	if isSynthetic(dir) {
		o.logf("using synthetic %s %s in %s", o.Synthetic, o.Quant, dir)
	} else {
		o.logf("writing synthetic %s %s to %s", o.Synthetic, o.Quant, dir)
	}
	start := time.Now()
	if err := Synthesize(dir, o.Synthetic, o.Quant); err != nil {
		if o.CacheDir == "" {
			os.RemoveAll(root)
		}
		return "", fmt.Errorf("bench: synthetic %s %s: %w", o.Synthetic, o.Quant, err)
	}
	o.logf("synthetic checkpoint ready (%.1fs)", time.Since(start).Seconds())
	debug.FreeOSMemory()
	return dir, nil
}

// weightBytes fills the checkpoint size and the bytes one decode step
// reads: every tensor, except that an untied embedding table is read one
// row at a time (a tied one is read whole as the output head), and so is
// a table of per-layer input embeddings (Gemma 4's embed_tokens_per_layer);
// the towers and their projectors run once per picture or clip, not per
// token.
func (r *Report) weightBytes(ck *checkpoint.Checkpoint) {
	sum := ck.Weights
	r.WeightBytes = sum.Bytes
	r.Params = sum.ParamCount
	tied := ck.Config.TieWordEmbeddings
	var rowWise int64
	for _, t := range sum.Tensors {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(t.Name, ".weight"), ".scales"), ".biases")
		if strings.HasSuffix(base, "embed_tokens_per_layer") || (!tied && strings.HasSuffix(base, "embed_tokens")) ||
			towerSide(t.Name) {
			rowWise += t.Length
		}
	}
	r.WeightBytesPerToken = sum.Bytes - rowWise
}

// towerSide reports whether a tensor belongs to a tower or the projector
// into the decoder (Gemma 3's multi_modal_projector, Gemma 4's
// embed_audio and embed_vision).
func towerSide(name string) bool {
	return checkpoint.TowerTensor(name) != 0 || strings.Contains(name, "multi_modal_projector.") ||
		strings.Contains(name, "embed_audio.") || strings.Contains(name, "embed_vision.")
}

// bandwidth measures the streaming-read bandwidth of the memory the
// model's weights are read from — the device's, by the backend's own
// kernels, when it has any; else the host's — with the RSS sampler paused
// (the buffer is not the model's memory), and adds the passes to the
// report; it returns this measurement's median.
func (r *Report) bandwidth(m *engine.Model, opt Options, rss *rssSampler) (float64, error) {
	rss.pause()
	defer rss.resume()
	var bw Bandwidth
	rates, onDevice, err := m.ReadBandwidth(opt.BandwidthBytes, 2)
	switch {
	case err != nil:
		return 0, err
	case onDevice:
		bw = Bandwidth{Bytes: opt.BandwidthBytes, Device: true}
		for _, rate := range rates {
			bw.Passes = append(bw.Passes, rate/1e9)
		}
		bw.GBPerS = median(bw.Passes)
	default:
		bw = MeasureBandwidth(opt.BandwidthBytes, opt.Engine.Threads, 2)
	}
	r.Bandwidth.Bytes, r.Bandwidth.Threads, r.Bandwidth.Device = bw.Bytes, bw.Threads, bw.Device
	r.Bandwidth.Passes = append(r.Bandwidth.Passes, bw.Passes...)
	r.Bandwidth.GBPerS = median(r.Bandwidth.Passes)
	r.BandwidthGBs = r.Bandwidth.GBPerS
	debug.FreeOSMemory()
	return bw.GBPerS, nil
}

func (r *Report) measure(ctx context.Context, ck *checkpoint.Checkpoint, opt Options, rss *rssSampler) error {
	opt.logf("loading %s", ck.Dir)
	start := time.Now()
	m, err := engine.LoadCheckpoint(ck, opt.Engine)
	if err != nil {
		return err
	}
	defer m.Close()
	r.LoadSeconds = time.Since(start).Seconds()
	r.Backend = m.Backend()
	if r.Backend == "cpu" {
		r.Kernels = cpu.KernelSets()[0] // the set engine.Load's cpu backend picks
	}
	vocab := m.Checkpoint.Config.VocabSize
	// Warm-up: every weight read once (pages in, caches and plans made).
	if _, _, err := decode(ctx, m, vocab, 8, 0); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	for _, p := range opt.Prompts {
		var ttft []float64
		for i := 0; i < opt.Repeats; i++ {
			opt.logf("prefill %d tokens (%d/%d)", p, i+1, opt.Repeats)
			d, err := prefill(ctx, m, vocab, p)
			if err != nil {
				return fmt.Errorf("prefill %d: %w", p, err)
			}
			ttft = append(ttft, d.Seconds()*1000)
		}
		key := strconv.Itoa(p)
		r.TTFTMs[key] = median(ttft)
		r.PrefillTokS[key] = float64(p) / (median(ttft) / 1000)
		r.Samples.TTFTMs[key] = ttft
	}
	// Each decode run is bracketed by bandwidth measurements, and its
	// fraction of the bound uses the bandwidth measured around it, so a
	// machine whose load drifts is compared with itself.
	opt.logf("measuring read bandwidth (%d MB)", opt.BandwidthBytes>>20)
	bw, err := r.bandwidth(m, opt, rss)
	if err != nil {
		return err
	}
	for i := 0; i < opt.Repeats; i++ {
		opt.logf("decode %d tokens (%d/%d)", opt.Decode, i+1, opt.Repeats)
		d, host, err := decode(ctx, m, vocab, opt.Decode, opt.DecodeContext)
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		tokS := float64(opt.Decode) / d.Seconds()
		if host.Steps > 0 {
			r.Samples.HostQueueUs = append(r.Samples.HostQueueUs, float64(host.Queue.Microseconds())/float64(opt.Decode))
			r.Samples.HostWaitUs = append(r.Samples.HostWaitUs, float64(host.Wait.Microseconds())/float64(opt.Decode))
		}
		after, err := r.bandwidth(m, opt, rss)
		if err != nil {
			return err
		}
		bound := (bw + after) / 2 * 1e9 / float64(r.WeightBytesPerToken)
		r.Samples.DecodeTokS = append(r.Samples.DecodeTokS, tokS)
		r.Samples.DecodeFraction = append(r.Samples.DecodeFraction, tokS/bound)
		bw = after
	}
	r.DecodeTokS = median(r.Samples.DecodeTokS)
	if len(r.Samples.HostQueueUs) > 0 {
		r.HostQueueUs, r.HostWaitUs = median(r.Samples.HostQueueUs), median(r.Samples.HostWaitUs)
	}
	r.DecodeFractionOfBound = median(r.Samples.DecodeFraction)
	if err := r.measureBatched(ctx, m, opt); err != nil {
		return err
	}
	if err := r.measureImage(ctx, m, ck, opt); err != nil {
		return err
	}
	if err := r.measureAudio(ctx, m, ck, opt); err != nil {
		return err
	}
	if opt.Profile {
		// one step at the decode runs' middle context
		prompt := max(1, opt.Decode/2)
		r.ProfileContext = prompt + 1
		opt.logf("profiling a decode step at context %d", r.ProfileContext)
		if r.DecodeProfile, err = m.ProfileDecode(ctx, prompt); err != nil {
			return fmt.Errorf("profile: %w", err)
		}
	}
	return nil
}

// prompt is n deterministic token ids below vocab.
func prompt(n, vocab int) []int32 {
	ids := make([]int32, n)
	x := uint32(12345)
	for i := range ids {
		x = x*1664525 + 1013904223
		ids[i] = int32(x>>8) % int32(vocab)
	}
	return ids
}

// prefill times the forward pass of an n-token prompt up to the first
// token's logits and its argmax (the time to first token).
func prefill(ctx context.Context, m *engine.Model, vocab, n int) (time.Duration, error) {
	seq, err := m.NewSequence(n + 1)
	if err != nil {
		return 0, err
	}
	defer seq.Close()
	ids := prompt(n, vocab)
	start := time.Now()
	logits, err := seq.Forward(ctx, ids, false)
	if err != nil {
		return 0, err
	}
	sample.Argmax(logits)
	return time.Since(start), nil
}

// decode reads one token untimed, then times n greedy steps the way the
// engine's runner decodes greedily (engine/generate.go): Sequence.Greedy,
// so the backend picks each step's token, the logits are not read back,
// and a backend that queues work runs one step ahead of the reads.
func decode(ctx context.Context, m *engine.Model, vocab, n, held int) (time.Duration, engine.HostTimes, error) {
	held = max(1, held)
	seq, err := m.NewSequence(held + n)
	if err != nil {
		return 0, engine.HostTimes{}, err
	}
	defer seq.Close()
	gr, err := seq.Greedy(ctx, prompt(held, vocab))
	if err != nil {
		return 0, engine.HostTimes{}, err
	}
	defer gr.Close()
	if _, err := gr.Next(true); err != nil {
		return 0, engine.HostTimes{}, err
	}
	before := gr.HostTimes()
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err = gr.Next(i+1 < n); err != nil {
			return 0, engine.HostTimes{}, err
		}
	}
	d, after := time.Since(start), gr.HostTimes()
	return d, engine.HostTimes{Steps: after.Steps - before.Steps, Queue: after.Queue - before.Queue, Wait: after.Wait - before.Wait}, nil
}

func kernelSets() []string { return cpu.KernelSets() }
