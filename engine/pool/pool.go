// Package pool owns the loaded model: it loads a model on demand when a
// request names it, keeps one model resident at a time, and unloads the old
// one only after its requests have finished. It is safe for concurrent use.
package pool

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"hearth/engine"
	"hearth/engine/registry"
)

// Model names a loadable checkpoint: the id clients use and its directory.
type Model struct {
	ID  string
	Dir string
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
}

// ErrNoModel is returned when a request names no model and no default is
// configured.
var ErrNoModel = errors.New("no model named and no default model configured")

// Pool holds at most one loaded model.
type Pool struct {
	opt Options

	mu  sync.Mutex
	cur *slot // the resident (or loading) model; nil when none
}

// slot is one model, loading or loaded, with the requests using it.
type slot struct {
	model    Model
	ready    chan struct{} // closed when the load finished (r or err set)
	r        *engine.Runner
	err      error
	refs     int           // requests holding the runner (queued or running)
	retiring bool          // no new requests; unload when refs reaches 0
	drained  chan struct{} // closed when retiring and refs reached 0
	loadedAt time.Time
}

// New makes an empty pool. Nothing loads until Get.
func New(opt Options) *Pool {
	if opt.Open == nil {
		opt.Open = engine.Open
	}
	return &Pool{opt: opt}
}

// Default is the model served when a request names none.
func (p *Pool) Default() Model { return p.opt.Default }

// resolve maps a request's model name to a checkpoint.
func (p *Pool) resolve(name string) (Model, error) {
	d := p.opt.Default
	switch {
	case name == "" && d.Dir == "":
		return Model{}, ErrNoModel
	case name == "" || name == d.ID:
		return d, nil
	}
	p.mu.Lock()
	if c := p.cur; c != nil && c.model.ID == name {
		p.mu.Unlock()
		return c.model, nil
	}
	p.mu.Unlock()
	if p.opt.Resolve == nil {
		return Model{}, fmt.Errorf("%w: %q (this server serves only %q)", registry.ErrNotFound, name, d.ID)
	}
	return p.opt.Resolve(name)
}

// Get returns the runner for the named model ("" = the default), loading it
// if needed, and a release func the caller must call when its request is
// done. Loading another model waits until the resident model's requests
// have finished, then unloads it. ctx bounds the wait, not the load: a load
// other requests also wait for runs to completion.
func (p *Pool) Get(ctx context.Context, name string) (*engine.Runner, func(), error) {
	m, err := p.resolve(name)
	if err != nil {
		return nil, nil, err
	}
	for {
		p.mu.Lock()
		c := p.cur
		switch {
		case c == nil:
			s := &slot{model: m, ready: make(chan struct{}), refs: 1}
			p.cur = s
			p.mu.Unlock()
			p.load(s)
			if s.err != nil {
				return nil, nil, s.err
			}
			return s.r, p.releaser(s), nil
		case c.model.Dir == m.Dir && c.model.ID == m.ID && !c.retiring:
			c.refs++
			p.mu.Unlock()
			select {
			case <-c.ready:
			case <-ctx.Done():
				p.release(c)
				return nil, nil, ctx.Err()
			}
			if c.err != nil {
				p.release(c)
				return nil, nil, c.err
			}
			return c.r, p.releaser(c), nil
		default:
			// Another model is resident: stop new requests for it and wait
			// until the ones it has finish.
			c.retiring = true
			if c.refs == 0 {
				p.cur = nil
				p.mu.Unlock()
				<-c.ready
				if c.r != nil {
					c.r.Close()
				}
				continue
			}
			if c.drained == nil {
				c.drained = make(chan struct{})
			}
			drained := c.drained
			p.mu.Unlock()
			select {
			case <-drained:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
	}
}

// load opens s's checkpoint and publishes the result. A failed load leaves
// the pool empty, so the next request tries again.
func (p *Pool) load(s *slot) {
	opt := p.opt.Runner
	opt.ID = s.model.ID
	s.r, s.err = p.opt.Open(s.model.Dir, opt)
	s.loadedAt = time.Now()
	if s.err != nil {
		p.mu.Lock()
		if p.cur == s {
			p.cur = nil
		}
		p.mu.Unlock()
	}
	close(s.ready)
}

func (p *Pool) releaser(s *slot) func() {
	var once sync.Once
	return func() { once.Do(func() { p.release(s) }) }
}

// release drops one reference; the last one out of a retiring slot wakes
// the requests waiting to load another model.
func (p *Pool) release(s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.refs--
	if s.refs == 0 && s.retiring && s.drained != nil {
		close(s.drained)
		s.drained = nil
	}
}

// Status describes a loaded model for /api/ps.
type Status struct {
	engine.Info
	// Active counts the requests queued or running on it.
	Active   int       `json:"active_requests"`
	LoadedAt time.Time `json:"loaded_at"`
}

// Loaded lists the resident models (at most one for now).
func (p *Pool) Loaded() []Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Status
	if c := p.cur; c != nil {
		select {
		case <-c.ready:
			if c.r != nil {
				out = append(out, Status{Info: c.r.Info(), Active: c.refs, LoadedAt: c.loadedAt})
			}
		default:
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Close unloads the resident model, waiting for its running request.
// Requests that arrive afterwards load models again; callers stop the
// server first.
func (p *Pool) Close() error {
	p.mu.Lock()
	c := p.cur
	p.cur = nil
	p.mu.Unlock()
	if c == nil {
		return nil
	}
	<-c.ready
	if c.r == nil {
		return nil
	}
	return c.r.Close()
}
