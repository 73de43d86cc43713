package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"hearth/assets"
	"hearth/engine"
	"hearth/engine/draft"
	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/tensor"
	"hearth/web"
)

// runnerFlags are the flags that shape a loaded model.
type runnerFlags struct {
	threads, ctx *int
	backend      *string
	draft        *string
	kv           *string
	// loadDraft loads the draft model --draft names (cli.loadDraft).
	loadDraft func(name string, opt engine.Options) (*engine.Model, error)
}

func (c *cli) runnerFlags(fs interface {
	Int(name string, value int, usage string) *int
	String(name string, value string, usage string) *string
}) runnerFlags {
	backend := c.env.Getenv("HEARTH_BACKEND")
	if backend == "" {
		backend = "auto"
	}
	return runnerFlags{
		loadDraft: c.loadDraft,
		threads:   fs.Int("threads", 0, "CPU threads (0 = all cores)"),
		ctx:       fs.Int("ctx", 0, "context length in tokens (0 = the smaller of 8192 and the model's)"),
		backend:   fs.String("backend", backend, "auto (a real GPU when there is one, else the CPU), gpu or cpu (env HEARTH_BACKEND)"),
		kv:        fs.String("kv", "f32", "KV cache type: f32 (exact), q8 (int8 with a scale per 32 elements: about 3.5 times the context in the same memory) or q4 (4-bit: about 6 times, less exact); docs/design/kv-quant.md"),
		draft:     fs.String("draft", "none", "speculative decoding: ngram (drafts from the prompt and answer so far), a draft model sharing the target's tokenizer (a name as for --model), or none; off by default until benchmarks show a win"),
	}
}

// kvType is --kv's cache type (f32 where the command has no --kv).
func (f runnerFlags) kvType() (tensor.KVType, error) {
	if f.kv == nil {
		return tensor.KVF32, nil
	}
	kv, err := tensor.ParseKVType(*f.kv)
	if err != nil {
		return kv, fmt.Errorf("--kv: %w", err)
	}
	return kv, nil
}

// fit is the memory check the flags ask for before a load: their context
// and KV cache type.
func (f runnerFlags) fit() (fit.Options, error) {
	kv, err := f.kvType()
	return fit.Options{ContextTokens: *f.ctx, KV: kv}, err
}

func (f runnerFlags) options(queue int) (engine.RunnerOptions, error) {
	opt := engine.RunnerOptions{Options: engine.Options{Threads: *f.threads}, ContextTokens: *f.ctx, QueueLen: queue}
	if f.backend != nil {
		opt.Backend = *f.backend
	}
	kv, err := f.kvType()
	if err != nil {
		return opt, err
	}
	opt.KV = kv
	if f.draft != nil {
		switch *f.draft {
		case "", "none":
		case "ngram":
			opt.Draft = draft.DefaultNGram
		default:
			if f.loadDraft == nil {
				return opt, fmt.Errorf("--draft %q: expected ngram or none", *f.draft)
			}
			m, err := f.loadDraft(*f.draft, opt.Options)
			if err != nil {
				return opt, fmt.Errorf("--draft %q: %w", *f.draft, err)
			}
			opt.DraftModel = m
		}
	}
	return opt, nil
}

// engineFlags are the flags of the commands that run the engine and its
// server (serve, menu).
type engineFlags struct {
	addr      *addrFlags
	model     *string
	origins   *string
	queue     *int
	maxModels *int
	keepAlive *string
	drain     *time.Duration // how long shutdown lets requests finish
	bodyTime  *time.Duration // how long a client may take to send a body
	mediaURLs *bool          // fetch the http(s) URLs of image and video parts
	parallel  *int           // requests to one model decoding at once (batched)
	rf        runnerFlags
}

// durationEnv is the duration in the variable name, or def when it is
// unset.
func (c *cli) durationEnv(name string, def time.Duration) (time.Duration, error) {
	v := c.env.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive duration (such as 10s or 1m)", name, v)
	}
	return d, nil
}

func (c *cli) engineFlags(fs *flag.FlagSet) (*engineFlags, error) {
	addr, err := c.addrFlags(fs, true)
	if err != nil {
		return nil, err
	}
	maxModels := pool.DefaultMaxModels
	if v := c.env.Getenv("HEARTH_MAX_MODELS"); v != "" {
		if maxModels, err = strconv.Atoi(v); err != nil || maxModels < 1 {
			return nil, fmt.Errorf("HEARTH_MAX_MODELS=%q is not a positive number of models", v)
		}
	}
	keepAlive := cmp.Or(c.env.Getenv("HEARTH_KEEP_ALIVE"), pool.DefaultKeepAlive.String())
	drain, err := c.durationEnv("HEARTH_DRAIN", web.DefaultDrain)
	if err != nil {
		return nil, err
	}
	bodyTimeout, err := c.durationEnv("HEARTH_BODY_TIMEOUT", web.DefaultBodyTimeout)
	if err != nil {
		return nil, err
	}
	parallel := 1
	if v := c.env.Getenv("HEARTH_PARALLEL"); v != "" {
		if parallel, err = strconv.Atoi(v); err != nil || parallel < 1 {
			return nil, fmt.Errorf("HEARTH_PARALLEL=%q is not a positive number of requests", v)
		}
	}
	mediaURLs := false
	if v := c.env.Getenv("HEARTH_ALLOW_MEDIA_URLS"); v != "" {
		if mediaURLs, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("HEARTH_ALLOW_MEDIA_URLS=%q is not true or false", v)
		}
	}
	return &engineFlags{
		addr:      addr,
		model:     fs.String("model", c.env.Getenv("HEARTH_MODEL"), "model to serve when a request names none: a Hugging Face repo id in the cache, a checkpoint directory, or a .gguf file (env HEARTH_MODEL; default: the built-in model)"),
		origins:   fs.String("origins", c.env.Getenv("HEARTH_ORIGINS"), "browser origins allowed besides the server's own, comma-separated; * in a host or port is a wildcard (env HEARTH_ORIGINS)"),
		queue:     fs.Int("queue", 64, "requests that may wait for the model; more get 429"),
		maxModels: fs.Int("max-models", maxModels, "models kept loaded at once, memory permitting; loading one more unloads the least recently used idle one (env HEARTH_MAX_MODELS)"),
		keepAlive: fs.String("keep-alive", keepAlive, "how long a model stays loaded after its last request: a duration (5m, 1h), seconds, 0 to unload at once, or negative to keep it (env HEARTH_KEEP_ALIVE); a request's keep_alive overrides it"),
		drain:     fs.Duration("drain", drain, "on shutdown, how long requests may run to their end; streams still running then end with an error event (env HEARTH_DRAIN)"),
		bodyTime:  fs.Duration("body-timeout", bodyTimeout, "how long a client may take to send a request body; a slower one gets 408 (env HEARTH_BODY_TIMEOUT)"),
		mediaURLs: fs.Bool("allow-media-urls", mediaURLs, "let image and video parts name http(s) URLs, which the server downloads (at most 20 MiB each, in 30s, never from loopback or private addresses); off, clients send the bytes as base64 (env HEARTH_ALLOW_MEDIA_URLS)"),
		parallel:  fs.Int("parallel", parallel, "requests to one model that decode at once, their steps batched into one pass (continuous batching); each holds a KV cache of the whole context, which the memory estimate counts (env HEARTH_PARALLEL)"),
		rf:        c.runnerFlags(fs),
	}, nil
}

// maxParallel bounds --parallel: each request holds a whole context's KV
// cache, and a batched step's rows beyond a few dozen gain little.
const maxParallel = 64

// newPool resolves the default model (--model, else the built-in one) and
// makes the pool that owns the loaded models.
func (c *cli) newPool(f *engineFlags) (*pool.Pool, pool.Model, error) {
	if *f.maxModels < 1 {
		return nil, pool.Model{}, fmt.Errorf("--max-models %d: at least one model must fit", *f.maxModels)
	}
	// The server's times are checked here too: serve and menu both make
	// their pool first, once the flags are parsed.
	if *f.drain <= 0 {
		return nil, pool.Model{}, fmt.Errorf("--drain %v: must be positive", *f.drain)
	}
	if *f.bodyTime <= 0 {
		return nil, pool.Model{}, fmt.Errorf("--body-timeout %v: must be positive", *f.bodyTime)
	}
	keep, err := pool.ParseKeepAlive(*f.keepAlive)
	if err != nil {
		return nil, pool.Model{}, fmt.Errorf("--keep-alive: %w", err)
	}
	var def pool.Model
	if *f.model != "" {
		var fo fit.Options
		if fo, err = f.rf.fit(); err == nil {
			fo.Sequences = *f.parallel
			def, err = c.resolveModel(*f.model, fo)
		}
	} else {
		def, err = c.defaultModel()
	}
	if err != nil {
		return nil, def, err
	}
	if def.Shape.WeightBytes == 0 {
		// The built-in model: its shape, for the pool's memory estimate.
		if rec, err := c.registry().Resolve(def.ID); err == nil {
			def.Shape = rec.Shape
		}
	}
	if *f.parallel < 1 || *f.parallel > maxParallel {
		return nil, def, fmt.Errorf("--parallel %d: between 1 and %d requests", *f.parallel, maxParallel)
	}
	ropt, err := f.rf.options(*f.queue)
	if err != nil {
		return nil, def, err
	}
	ropt.Parallel = *f.parallel
	return pool.New(pool.Options{
		Runner: ropt, Default: def, Resolve: c.registryResolve,
		MaxModels: *f.maxModels, KeepAlive: &keep, Memory: fit.System,
	}), def, nil
}

// newServer makes the HTTP server over p.
func (c *cli) newServer(f *engineFlags, p *pool.Pool, log *slog.Logger) *web.Server {
	return web.New(c.serverOptions(f, p, log))
}

// serverOptions are the web server's settings from the flags.
func (c *cli) serverOptions(f *engineFlags, p *pool.Pool, log *slog.Logger) web.Options {
	return web.Options{Pool: p, Origins: splitList(*f.origins), Version: version, Logger: log, Registry: c.registry(),
		ContextTokens: *f.rf.ctx, Pull: c.pullModel, Drain: *f.drain, BodyTimeout: *f.bodyTime,
		Media: web.MediaOptions{FetchURLs: *f.mediaURLs}}
}

func (c *cli) serve(args []string) error {
	fs := c.flags("serve", "serve [flags]")
	f, err := c.engineFlags(fs)
	if err != nil {
		return err
	}
	quiet := fs.Bool("quiet", false, "log only errors")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected argument %q (use --model to choose the model)", fs.Arg(0))
	}
	ctx, stop := signal.NotifyContext(c.context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	level := slog.LevelInfo
	if *quiet {
		level = slog.LevelError
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: level}))

	p, def, err := c.newPool(f)
	if err != nil {
		return err
	}
	defer p.Close()

	// Load the default model now: a model that cannot load fails here,
	// not on the first request.
	start := time.Now()
	r, release, err := p.Get(ctx, "")
	if err != nil {
		return err
	}
	info := r.Info()
	release()

	ln, err := net.Listen("tcp", f.addr.addr())
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := c.newServer(f, p, log)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()

	tcp := ln.Addr().(*net.TCPAddr)
	url := "http://" + net.JoinHostPort(displayHost(tcp.IP), strconv.Itoa(tcp.Port))
	c.banner(url, info, def.ID == assets.StarterID, time.Since(start))

	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(c.stderr, "hearth: shutting down")
	// Shutdown drains for --drain, then stops what still runs.
	if err := srv.Shutdown(context.Background()); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return <-done
}

// banner prints serve's first lines: where the chat is, what is loaded,
// and, while the default is the starter, how to get a real model.
func (c *cli) banner(url string, info engine.Info, starter bool, took time.Duration) {
	fmt.Fprintf(c.stdout, "hearth %s listening on %s — open it to chat; the API is at /v1 (OpenAI) and /v1/messages (Anthropic)\n", version, url)
	parallel := ""
	if info.Parallel > 1 {
		parallel = fmt.Sprintf(", %d requests at once", info.Parallel)
	}
	fmt.Fprintf(c.stdout, "serving %s (%s, %s, %d tokens of context%s; loaded in %s)\n",
		info.ID, info.Family, info.Backend, info.ContextTokens, parallel, took.Round(time.Millisecond))
	if starter {
		fmt.Fprintf(c.stdout, "%s is a tiny built-in model for a first try; for a real one: hearth pull NAME (hearth ls --available lists them), then pick it in the chat\n", assets.StarterID)
	}
}

// displayHost is how the banner names the listening address.
func displayHost(ip net.IP) string {
	if ip == nil || ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return ip.String()
}
