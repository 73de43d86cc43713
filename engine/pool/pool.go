// Package pool owns the loaded models. It loads a model on demand when a
// request names it and keeps several resident while they fit in memory
// together (and stay under a count cap, like Ollama's
// OLLAMA_MAX_LOADED_MODELS). To make room it unloads the least recently
// used idle model first, and waits for a busy one to finish its requests
// only when unloading idle ones is not enough: a model is never unloaded
// under a request. An idle model unloads when its keep-alive runs out. No
// caller waits forever on a model that does not stop: an unload, or a load
// that needs its room, waits at most UnloadWait for the model's runner to
// finish the request it is still running (one whose client has gone), then
// gets an error while the runner closes in the background. It is safe for
// concurrent use.
package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"hearth/engine"
	"hearth/engine/fit"
	"hearth/engine/registry"
)

// Defaults of Options, as in Ollama.
const (
	DefaultMaxModels = 3
	DefaultKeepAlive = 5 * time.Minute
	// DefaultUnloadWait is far longer than a runner takes to notice that
	// its request was cancelled (a template render, a prefill chunk or a
	// decoding step).
	DefaultUnloadWait = 30 * time.Second
)

// Model names a loadable checkpoint: the id clients use and its directory.
type Model struct {
	ID  string
	Dir string
	// Shape is what fit needs to estimate the model's memory before it
	// loads (registry.Record.Shape). The zero Shape means unknown: the
	// model is then counted by its weight bytes once loaded.
	Shape fit.Shape
}

// Options configure a Pool.
type Options struct {
	// Runner is passed to engine.Open for every load (threads, context,
	// queue length); its ID is replaced by the model's.
	Runner engine.RunnerOptions
	// Default is served when a request names no model, or names
	// Default.ID. Its Dir may be empty: then a model must be named.
	Default Model
	// Resolve maps any other name to a checkpoint (the registry). A name
	// it does not know must yield an error wrapping registry.ErrNotFound.
	// Nil means only Default can be served.
	Resolve func(name string) (Model, error)
	// Open loads a checkpoint; nil means engine.Open.
	Open func(dir string, opt engine.RunnerOptions) (*engine.Runner, error)
	// MaxModels caps the resident models; 0 means DefaultMaxModels.
	MaxModels int
	// KeepAlive is how long a model stays loaded after its last request
	// when the request does not say (see Acquire): nil means
	// DefaultKeepAlive, 0 unloads it as soon as its requests end, and a
	// negative duration keeps it until it is evicted or the pool closes.
	KeepAlive *time.Duration
	// Memory reads the memory the models share (fit.System). The pool
	// admits a load when the estimates of the resident models and the new
	// one together are within Memory().Budget(). Nil (or an error) means
	// memory is not checked: only MaxModels bounds the pool.
	Memory func() (fit.Memory, error)
	// UnloadWait bounds how long an unload, or a load waiting for the room
	// an unloading model holds, waits for that model's runner to stop
	// once its requests have ended. Past it the waiter gets an error that
	// wraps engine.ErrClosed, and the runner closes (and frees its room)
	// whenever it stops. 0 means DefaultUnloadWait.
	UnloadWait time.Duration
}

// ErrNoModel is returned when a request names no model and no default is
// configured.
var ErrNoModel = errors.New("no model named and no default model configured")

// Pool holds the loaded models.
type Pool struct {
	opt Options

	mu    sync.Mutex
	slots []*slot       // resident, loading or unloading models
	freed chan struct{} // closed (and replaced) when a slot leaves slots
	// unloads counts unloads under way, so Close can wait for the ones a
	// timer or a release started.
	unloads int
	// uses counts acquires and releases: a logical clock for least
	// recently used, immune to equal timestamps.
	uses uint64
	// close stops a runner: (*engine.Runner).Close, replaced by tests.
	close func(*engine.Runner) error
	toks  tokenizers // read for Tokenizer, of models not loaded
}

// slot is one model, loading, loaded or unloading, with the requests using
// it. Fields after ready are guarded by Pool.mu.
type slot struct {
	model Model
	ready chan struct{} // closed when the load finished (r or err set)
	r     *engine.Runner
	err   error

	refs      int  // requests holding the runner (queued or running)
	retiring  bool // no new requests; unload when refs reaches 0
	unloading bool // an unload has started; nobody else closes r
	// closing is when the runner's Close began (zero before); closed is
	// closed once Close returned and the slot left the pool, with
	// closeErr its result.
	closing   time.Time
	closed    chan struct{}
	closeErr  error
	bytes     int64
	loadedAt  time.Time
	lastUse   uint64        // Pool.uses at its last acquire or release
	keepAlive time.Duration // of the latest request; negative = forever
	expiresAt time.Time     // zero when kept forever
	timer     *time.Timer   // the keep-alive countdown while idle
	timerGen  int           // tells a stale timer callback from the live one
}

// New makes an empty pool. Nothing loads until Get.
func New(opt Options) *Pool {
	if opt.Open == nil {
		opt.Open = engine.Open
	}
	if opt.MaxModels <= 0 {
		opt.MaxModels = DefaultMaxModels
	}
	if opt.UnloadWait <= 0 {
		opt.UnloadWait = DefaultUnloadWait
	}
	return &Pool{opt: opt, freed: make(chan struct{}), close: (*engine.Runner).Close}
}

// Default is the model served when a request names none.
func (p *Pool) Default() Model { return p.opt.Default }

// Untagged is a model name without Ollama's default tag: Ollama's clients
// name models "name:tag" and default the tag to "latest"; Hearth's names
// carry no tag, so "name:latest" means name.
func Untagged(name string) string { return strings.TrimSuffix(name, ":latest") }

// resolve maps a request's model name to a checkpoint.
func (p *Pool) resolve(name string) (Model, error) {
	name = Untagged(name)
	d := p.opt.Default
	switch {
	case name == "" && d.Dir == "":
		return Model{}, ErrNoModel
	case name == "" || name == d.ID:
		return d, nil
	}
	p.mu.Lock()
	for _, s := range p.slots {
		if s.model.ID == name && !s.retiring {
			p.mu.Unlock()
			return s.model, nil
		}
	}
	p.mu.Unlock()
	if p.opt.Resolve == nil {
		return Model{}, fmt.Errorf("%w: %q (this server serves only %q)", registry.ErrNotFound, name, d.ID)
	}
	return p.opt.Resolve(name)
}

// Resolve names the checkpoint a request for name is served from (the
// default for ""), without loading it: routes that run a model outside
// the pool (Whisper transcription) find their checkpoint through it.
func (p *Pool) Resolve(name string) (Model, error) { return p.resolve(name) }

// LoadOptions are the engine options the pool loads models with (the
// backend, threads), for models run outside it.
func (p *Pool) LoadOptions() engine.Options { return p.opt.Runner.Options }

// Get is Acquire with the pool's default keep-alive.
func (p *Pool) Get(ctx context.Context, name string) (*engine.Runner, func(), error) {
	return p.Acquire(ctx, name, nil)
}

// Acquire returns the runner for the named model ("" = the default),
// loading it if needed, and a release func the caller must call when its
// request is done. keepAlive is the request's keep_alive: how long the
// model stays loaded once its requests are done (nil = the pool's
// default; 0 = unload it then; negative = until evicted or closed).
//
// A load that does not fit beside the resident models first unloads the
// least recently used idle ones; when that is not enough it waits for a
// busy model's requests to finish, then unloads it. ctx bounds that wait,
// not the load: a load other requests also wait for runs to completion.
// When the room is held only by a model whose runner has not stopped
// within UnloadWait of its unload, Acquire fails with an error wrapping
// engine.ErrClosed instead of waiting on.
func (p *Pool) Acquire(ctx context.Context, name string, keepAlive *time.Duration) (*engine.Runner, func(), error) {
	m, err := p.resolve(name)
	if err != nil {
		return nil, nil, err
	}
	keep := p.keepAlive(keepAlive)
	var (
		mem            fit.Memory
		memRead, memOK bool
	)
	for {
		p.mu.Lock()
		s := p.find(m)
		if s == nil && !memRead {
			// Memory matters only for a load: read it once, unlocked.
			p.mu.Unlock()
			mem, memOK = p.memory()
			memRead = true
			if memOK {
				// A model that cannot fit even alone is refused before
				// anything is evicted for it.
				if _, err := fit.Admit(m.ID, m.Shape, p.fitOptions(m, 0), mem); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		if s != nil {
			p.acquire(s, keep)
			p.mu.Unlock()
			select {
			case <-s.ready:
			case <-ctx.Done():
				p.release(s)
				return nil, nil, ctx.Err()
			}
			if s.err != nil {
				p.release(s)
				return nil, nil, s.err
			}
			return s.r, p.releaser(s), nil
		}
		victim, wait, stuck := p.makeRoom(m, mem, memOK)
		switch {
		case victim != nil:
			p.mu.Unlock()
			p.finishUnload(victim)
			continue
		case wait != nil:
			// Look again when a closing runner would count as stuck.
			t := time.NewTimer(p.nextCheck())
			p.mu.Unlock()
			select {
			case <-wait:
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, nil, ctx.Err()
			}
			t.Stop()
			continue
		case stuck != nil:
			// Only a runner that does not stop holds the room.
			err := p.stuckError(stuck)
			p.mu.Unlock()
			return nil, nil, err
		}
		s = &slot{model: m, ready: make(chan struct{}), bytes: p.need(m)}
		p.acquire(s, keep)
		p.slots = append(p.slots, s)
		p.mu.Unlock()
		p.load(s)
		if s.err != nil {
			return nil, nil, s.err
		}
		return s.r, p.releaser(s), nil
	}
}

// keepAlive is the keep-alive a request gets.
func (p *Pool) keepAlive(req *time.Duration) time.Duration {
	switch {
	case req != nil:
		return *req
	case p.opt.KeepAlive != nil:
		return *p.opt.KeepAlive
	}
	return DefaultKeepAlive
}

// Memory is the memory the models share, as the pool's fit checks read it
// (Options.Memory); ok is false where the pool checks none.
func (p *Pool) Memory() (fit.Memory, bool) { return p.memory() }

func (p *Pool) memory() (fit.Memory, bool) {
	if p.opt.Memory == nil {
		return fit.Memory{}, false
	}
	m, err := p.opt.Memory()
	return m, err == nil
}

// contextTokens is the context engine.Open gives m (see RunnerOptions).
func (p *Pool) contextTokens(m Model) int {
	ctx := p.opt.Runner.ContextTokens
	if ctx <= 0 {
		ctx = 8192
	}
	if n := m.Shape.MaxContextTokens; n > 0 {
		ctx = min(ctx, n)
	}
	return ctx
}

// fitOptions estimates m at its context, with the bytes of the resident
// models added to the process's overhead: they share one process.
func (p *Pool) fitOptions(m Model, residentBytes int64) fit.Options {
	return fit.Options{ContextTokens: p.contextTokens(m), Sequences: p.opt.Runner.Parallel, KV: p.opt.Runner.KV, OverheadBytes: fit.DefaultOverheadBytes + residentBytes}
}

// need estimates the memory m holds once loaded, without the process
// overhead the models share; 0 when its shape is unknown.
func (p *Pool) need(m Model) int64 {
	if m.Shape.WeightBytes == 0 && len(m.Shape.Layers) == 0 {
		return 0
	}
	b := fit.Estimate(m.Shape, p.fitOptions(m, 0))
	return b.Total() - b.OverheadBytes
}

// find returns the slot serving m, if one takes new requests. Callers hold
// p.mu.
func (p *Pool) find(m Model) *slot {
	for _, s := range p.slots {
		if s.model.ID == m.ID && s.model.Dir == m.Dir && !s.retiring {
			return s
		}
	}
	return nil
}

// acquire adds a request to s and restarts its keep-alive. Callers hold
// p.mu.
func (p *Pool) acquire(s *slot, keep time.Duration) {
	s.refs++
	s.stopTimer()
	s.keepAlive = keep
	p.uses++
	s.lastUse = p.uses
	s.expiresAt = expiry(time.Now(), keep)
}

func expiry(from time.Time, keep time.Duration) time.Time {
	if keep < 0 {
		return time.Time{}
	}
	return from.Add(keep)
}

// makeRoom decides what loading m needs first. It returns an idle slot to
// unload now (already marked), or a channel to wait on until a busy model
// drains or a closing one is gone, or neither when m can load now. When
// the only room is held by runners that do not stop (stuck), it returns
// one of them instead. Callers hold p.mu.
func (p *Pool) makeRoom(m Model, mem fit.Memory, memOK bool) (victim *slot, wait <-chan struct{}, stuck *slot) {
	for _, s := range p.slots {
		// The name now means another checkpoint (a new snapshot of the
		// repo): the old one takes no more requests.
		if s.model.ID == m.ID && !s.retiring {
			if p.retire(s) {
				return s, nil, nil
			}
		}
	}
	if p.fits(m, mem, memOK) {
		return nil, nil, nil
	}
	var idle, busy *slot
	closing, draining := false, false
	for _, s := range p.slots {
		switch {
		case s.unloading && p.stuck(s):
			stuck = s
		case s.unloading:
			closing = true
		case s.retiring:
			draining = true
		case s.refs == 0:
			if idle == nil || s.lastUse < idle.lastUse {
				idle = s
			}
		default:
			if busy == nil || s.lastUse < busy.lastUse {
				busy = s
			}
		}
	}
	switch {
	case closing:
		// Memory is on its way back: see whether that is enough.
		return nil, p.freed, nil
	case idle != nil:
		p.retire(idle)
		return idle, nil, nil
	case draining:
		return nil, p.freed, nil
	case busy != nil:
		// No idle model left: stop sending requests to the least recently
		// used busy one, and unload it when they finish.
		p.retire(busy)
		return nil, p.freed, nil
	case stuck != nil:
		return nil, nil, stuck
	}
	// The pool is empty: the model was admitted alone, so load it.
	return nil, nil, nil
}

// stuck reports whether s's runner has been closing for UnloadWait without
// stopping. Callers hold p.mu.
func (p *Pool) stuck(s *slot) bool {
	return !s.closing.IsZero() && time.Since(s.closing) >= p.opt.UnloadWait
}

// nextCheck is how long until a closing runner would count as stuck, at
// most UnloadWait: how long a wait for room may sleep before it looks
// again. Callers hold p.mu.
func (p *Pool) nextCheck() time.Duration {
	d := p.opt.UnloadWait
	for _, s := range p.slots {
		if s.unloading && !s.closing.IsZero() {
			if left := time.Until(s.closing.Add(p.opt.UnloadWait)); left > 0 {
				d = min(d, left)
			}
		}
	}
	return d
}

// fits reports whether m can load beside every slot in the pool. Slots
// still draining or unloading count: their memory is not free yet.
func (p *Pool) fits(m Model, mem fit.Memory, memOK bool) bool {
	if len(p.slots) >= p.opt.MaxModels {
		return false
	}
	if !memOK {
		return true
	}
	var resident int64
	for _, s := range p.slots {
		resident += s.bytes
	}
	_, err := fit.Admit(m.ID, m.Shape, p.fitOptions(m, resident), mem)
	return err == nil
}

// retire stops new requests for s. It returns true when s is idle and
// marked for unloading: the caller must then call finishUnload. A busy
// slot unloads when its last request releases it. Callers hold p.mu.
func (p *Pool) retire(s *slot) bool {
	s.retiring = true
	if s.refs > 0 {
		return false
	}
	return p.startUnload(s)
}

// startUnload marks s as being unloaded by the caller; false when another
// goroutine already is. Callers hold p.mu.
func (p *Pool) startUnload(s *slot) bool {
	if s.unloading {
		return false
	}
	s.retiring, s.unloading = true, true
	s.stopTimer()
	p.unloads++
	return true
}

// finishUnload closes s's runner and removes it from the pool, waking
// loads that wait for room. It follows a startUnload that returned true.
// Once s has loaded it waits at most UnloadWait for the runner to stop:
// a runner still finishing a request past that closes in the background,
// and finishUnload returns the error stuckError describes.
func (p *Pool) finishUnload(s *slot) error {
	<-s.ready
	p.mu.Lock()
	s.closing = time.Now()
	s.closed = make(chan struct{})
	p.mu.Unlock()
	go func() {
		var err error
		if s.r != nil {
			err = p.close(s.r)
		}
		p.mu.Lock()
		s.closeErr = err
		p.unloads--
		p.remove(s)
		p.mu.Unlock()
		close(s.closed)
	}()
	t := time.NewTimer(p.opt.UnloadWait)
	defer t.Stop()
	select {
	case <-s.closed:
		return s.closeErr
	case <-t.C:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.stuckError(s)
	}
}

// stuckError says that s's runner has not stopped within UnloadWait of its
// Close. Callers hold p.mu.
func (p *Pool) stuckError(s *slot) error {
	return fmt.Errorf("%w: %q has not stopped %v after its last request ended (a cancelled request is still running); it unloads when that request stops, try again then",
		engine.ErrClosed, s.model.ID, time.Since(s.closing).Round(100*time.Millisecond))
}

// remove takes s out of the pool and wakes the loads waiting for room
// (and Close). Callers hold p.mu.
func (p *Pool) remove(s *slot) {
	if i := slices.Index(p.slots, s); i >= 0 {
		p.slots = slices.Delete(p.slots, i, i+1)
	}
	close(p.freed)
	p.freed = make(chan struct{})
}

func (s *slot) stopTimer() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.timerGen++ // a callback already running sees it is stale
}

// load opens s's checkpoint and publishes the result. A failed load leaves
// the pool, so the next request tries again.
func (p *Pool) load(s *slot) {
	opt := p.opt.Runner
	opt.ID = s.model.ID
	r, err := p.opt.Open(s.model.Dir, opt)
	p.mu.Lock()
	s.r, s.err = r, err
	s.loadedAt = time.Now()
	if err != nil {
		s.retiring, s.unloading = true, true // nothing to close
		p.remove(s)
	} else if s.bytes == 0 {
		s.bytes = r.Info().WeightBytes
	}
	p.mu.Unlock()
	close(s.ready)
}

func (p *Pool) releaser(s *slot) func() {
	var once sync.Once
	return func() { once.Do(func() { p.release(s) }) }
}

// release drops one reference. The last one out unloads a retiring slot,
// or one whose keep-alive is 0, and otherwise starts the keep-alive timer.
func (p *Pool) release(s *slot) {
	p.mu.Lock()
	s.refs--
	p.uses++
	s.lastUse = p.uses
	now := time.Now()
	if s.refs > 0 || s.unloading {
		p.mu.Unlock()
		return
	}
	if s.retiring || s.keepAlive == 0 {
		ok := p.startUnload(s)
		p.mu.Unlock()
		if ok {
			p.finishUnload(s)
		}
		return
	}
	s.expiresAt = expiry(now, s.keepAlive)
	if s.keepAlive > 0 {
		s.stopTimer()
		gen := s.timerGen
		s.timer = time.AfterFunc(s.keepAlive, func() { p.expire(s, gen) })
	}
	p.mu.Unlock()
}

// expire unloads s when its keep-alive ran out with no request since.
func (p *Pool) expire(s *slot, gen int) {
	p.mu.Lock()
	if s.timerGen != gen || s.refs > 0 || s.retiring {
		p.mu.Unlock()
		return
	}
	ok := p.startUnload(s)
	p.mu.Unlock()
	if ok {
		p.finishUnload(s)
	}
}

// Unload unloads the named model ("" = the default) if it is loaded, and
// never loads it (Ollama's keep_alive 0 request with no prompt). An idle
// model is closed before Unload returns (or, when its runner is still
// finishing a cancelled request after UnloadWait, Unload returns an error
// wrapping engine.ErrClosed and the runner closes when it stops); a busy
// one takes no new requests and unloads when they finish. It returns the
// model's id.
func (p *Pool) Unload(name string) (string, error) {
	m, err := p.resolve(name)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	s := p.find(m)
	now := s != nil && p.retire(s)
	p.mu.Unlock()
	if now {
		return m.ID, p.finishUnload(s)
	}
	return m.ID, nil
}

// Status describes a loaded model for /api/ps.
type Status struct {
	engine.Info
	// Active counts the requests queued or running on it.
	Active   int
	LoadedAt time.Time
	// ExpiresAt is when the model unloads if no request comes (Ollama's
	// field): the last request's end (its start while one runs) plus its
	// keep-alive. Zero when the model is kept until evicted.
	ExpiresAt time.Time
	// SizeBytes is the memory the pool counts for it: fit's estimate
	// (weights, KV cache at its context, working buffers), or its weights
	// when its shape is unknown.
	SizeBytes int64
	// The prompt cache's lookups, hits, prompt tokens saved and memory.
	PromptLookups, PromptHits, PromptHitTokens uint64
	PromptCacheBytes                           int64
	// Batched decoding (Info.Parallel > 1): the passes run, the rows
	// they carried, and the rows of the last one.
	BatchPasses, BatchRows, LastBatch int64
}

// Loaded lists the resident models, the most recently used first (as
// Ollama's ps does), so the first is the one a user last chose.
func (p *Pool) Loaded() []Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	slots := slices.Clone(p.slots)
	slices.SortFunc(slots, func(a, b *slot) int { return cmp.Compare(b.lastUse, a.lastUse) })
	var out []Status
	for _, s := range slots {
		if s.unloading {
			continue
		}
		select {
		case <-s.ready:
			if s.r != nil {
				st := Status{Info: s.r.Info(), Active: s.refs, LoadedAt: s.loadedAt, ExpiresAt: s.expiresAt, SizeBytes: s.bytes}
				st.PromptLookups, st.PromptHits, st.PromptHitTokens, st.PromptCacheBytes = s.r.PromptCacheStats()
				st.BatchPasses, st.BatchRows, st.LastBatch = s.r.BatchStats()
				out = append(out, st)
			}
		default:
		}
	}
	return out
}

// Close unloads every model, waiting for their running requests and for
// unloads already under way. Requests that arrive afterwards load models
// again; callers stop the server first.
func (p *Pool) Close() error {
	p.mu.Lock()
	var mine []*slot
	for _, s := range p.slots {
		if p.startUnload(s) {
			mine = append(mine, s)
		}
	}
	p.mu.Unlock()
	var errs []error
	for _, s := range mine {
		errs = append(errs, p.finishUnload(s))
	}
	// Wait for the unloads a timer or a release started too, but not for
	// a runner that does not stop: report it.
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.unloads > 0 {
		var stuck []*slot
		waiting := false
		for _, s := range p.slots {
			switch {
			case s.unloading && p.stuck(s):
				stuck = append(stuck, s)
			case s.unloading:
				waiting = true
			}
		}
		if !waiting {
			for _, s := range stuck {
				if !slices.Contains(mine, s) { // finishUnload reported those
					errs = append(errs, p.stuckError(s))
				}
			}
			break
		}
		t := time.NewTimer(p.nextCheck())
		freed := p.freed
		p.mu.Unlock()
		select {
		case <-freed:
		case <-t.C:
		}
		t.Stop()
		p.mu.Lock()
	}
	return errors.Join(errs...)
}
