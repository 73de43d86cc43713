package pool

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/fit"
	"hearth/engine/registry"
	"hearth/internal/testmodels"
)

var tiny = Model{ID: "chat-tiny", Dir: filepath.Join(testmodels.Root(), "chat-tiny")}

// counting wraps engine.Open: it counts loads per id, keeps every runner it
// opened, and records a violation when a load starts while max runners are
// still open.
type counting struct {
	max        int
	mu         sync.Mutex
	opens      map[string]int
	runners    []*engine.Runner
	violations []string
}

func (c *counting) Open(dir string, opt engine.RunnerOptions) (*engine.Runner, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var open []string
	for _, r := range c.runners {
		if !closed(r) {
			open = append(open, r.Info().ID)
		}
	}
	if len(open) >= c.max {
		c.violations = append(c.violations, fmt.Sprintf("loading %s while %d models are open (%q), cap %d", opt.ID, len(open), open, c.max))
	}
	r, err := engine.Open(dir, opt)
	if err != nil {
		return nil, err
	}
	c.opens[opt.ID]++
	c.runners = append(c.runners, r)
	return r, nil
}

func (c *counting) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opens[id]
}

// closed reports whether r was unloaded, without running a generation: a
// request on a closed runner fails before it is queued, and a live one
// sees its cancelled context.
func closed(r *engine.Runner) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Generate(ctx, engine.Request{Prompt: "x", MaxTokens: 1}, func(engine.Delta) error { return nil })
	return errors.Is(err, engine.ErrClosed)
}

// newPool serves chat-tiny as the default and, under the names "a", "b"
// and "c", again (several ids of one checkpoint: enough to hold several
// models). edit adjusts the options.
func newPool(t *testing.T, edit ...func(*Options)) (*Pool, *counting) {
	t.Helper()
	opt := Options{
		Runner:  engine.RunnerOptions{Options: engine.Options{Threads: 1, Backend: "cpu"}},
		Default: tiny,
		Resolve: func(name string) (Model, error) {
			if name == "a" || name == "b" || name == "c" {
				return Model{ID: name, Dir: tiny.Dir}, nil
			}
			return Model{}, registry.ErrNotFound
		},
	}
	for _, e := range edit {
		e(&opt)
	}
	c := &counting{opens: map[string]int{}, max: opt.MaxModels}
	if c.max == 0 {
		c.max = DefaultMaxModels
	}
	opt.Open = c.Open
	p := New(opt)
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		for _, v := range c.violations {
			t.Error(v)
		}
	})
	return p, c
}

func maxModels(n int) func(*Options) { return func(o *Options) { o.MaxModels = n } }

// get acquires name and fails the test on an error.
func get(t *testing.T, p *Pool, name string, keep *time.Duration) (*engine.Runner, func()) {
	t.Helper()
	r, release, err := p.Acquire(context.Background(), name, keep)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", name, err)
	}
	return r, release
}

func ids(st []Status) []string {
	var out []string
	for _, s := range st {
		out = append(out, s.ID)
	}
	return out
}

// wantLoaded checks the resident models, most recently used first.
func wantLoaded(t *testing.T, p *Pool, want ...string) {
	t.Helper()
	if got := ids(p.Loaded()); !slices.Equal(got, want) {
		t.Errorf("Loaded() = %q, want %q", got, want)
	}
}

// generate runs a one-token request; it fails when r was closed under it.
func generate(r *engine.Runner) error {
	_, err := r.Generate(context.Background(), engine.Request{Prompt: "hi", MaxTokens: 1}, func(engine.Delta) error { return nil })
	return err
}

// waitUnloaded waits until id has left the pool (keep-alive timers run in
// their own goroutine); it fails only when that never happens.
func waitUnloaded(t *testing.T, p *Pool, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for slices.Contains(ids(p.Loaded()), id) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still loaded: %+v", id, p.Loaded())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func dur(d time.Duration) *time.Duration { return &d }

func TestGetLoadsOnceAndShares(t *testing.T) {
	p, c := newPool(t)
	var wg sync.WaitGroup
	runners := make([]*engine.Runner, 8)
	for i := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := ""
			if i%2 == 1 {
				name = "chat-tiny"
			}
			r, release, err := p.Get(context.Background(), name)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			runners[i] = r
		}()
	}
	wg.Wait()
	// Ollama clients add the tag ":latest"; it names the same model.
	r, release, err := p.Get(context.Background(), "chat-tiny:latest")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if r != runners[0] {
		t.Errorf(`"chat-tiny:latest" got another runner than "chat-tiny"`)
	}
	if n := c.count("chat-tiny"); n != 1 {
		t.Errorf("chat-tiny loaded %d times, want 1", n)
	}
	for _, r := range runners {
		if r != runners[0] {
			t.Fatalf("requests got different runners")
		}
	}
	st := p.Loaded()
	if len(st) != 1 || st[0].ID != "chat-tiny" || st[0].Active != 0 {
		t.Errorf("Loaded() = %+v", st)
	}
}

func TestModelsStayResident(t *testing.T) {
	p, c := newPool(t)
	ra, releaseA := get(t, p, "a", nil)
	releaseA()
	rb, releaseB := get(t, p, "b", nil)
	releaseB()
	wantLoaded(t, p, "b", "a")
	ra2, releaseA := get(t, p, "a", nil)
	releaseA()
	if ra2 != ra || c.count("a") != 1 || c.count("b") != 1 {
		t.Errorf("a reloaded: loads a %d, b %d", c.count("a"), c.count("b"))
	}
	for _, r := range []*engine.Runner{ra, rb} {
		if err := generate(r); err != nil {
			t.Errorf("%s: %v", r.Info().ID, err)
		}
	}
}

func TestMaxModelsEvictsLeastRecentlyUsed(t *testing.T) {
	p, c := newPool(t, maxModels(2))
	ra, release := get(t, p, "a", nil)
	release()
	rb, release := get(t, p, "b", nil)
	release()
	_, release = get(t, p, "a", nil) // a is now more recent than b
	release()
	rc, release := get(t, p, "c", nil)
	release()
	wantLoaded(t, p, "c", "a")
	if !closed(rb) {
		t.Error("b, the least recently used, is still open")
	}
	if closed(ra) || closed(rc) {
		t.Error("a or c was closed")
	}
	if c.count("a") != 1 {
		t.Errorf("a loaded %d times", c.count("a"))
	}
}

// fakeShape is a model of weightBytes with no layers: its estimate is its
// weights plus a few bytes of logits.
func fakeShape(weightBytes int64) fit.Shape { return fit.Shape{WeightBytes: weightBytes} }

// budgetFor returns a memory whose budget holds the process overhead and n
// models of shape s, and less than n+1 of them.
func budgetFor(t *testing.T, p *Pool, s fit.Shape, n int) fit.Memory {
	need := p.need(Model{Shape: s})
	if need <= 0 {
		t.Fatalf("need(%+v) = %d", s, need)
	}
	return fit.Memory{TotalBytes: 1 << 50, WorkingSetBytes: fit.DefaultOverheadBytes + int64(n)*need + need/2}
}

// newMemoryPool makes a pool whose models all have shape s and whose
// memory budget holds n of them (budgetFor), and returns that memory.
func newMemoryPool(t *testing.T, s fit.Shape, n int) (*Pool, *counting, fit.Memory) {
	var mem fit.Memory
	p, c := newPool(t, func(o *Options) {
		o.Memory = func() (fit.Memory, error) { return mem, nil }
		resolve := o.Resolve
		o.Resolve = func(name string) (Model, error) {
			m, err := resolve(name)
			m.Shape = s
			return m, err
		}
	})
	mem = budgetFor(t, p, s, n)
	return p, c, mem
}

func TestMemoryEvictsLeastRecentlyUsedIdle(t *testing.T) {
	shape := fakeShape(1 << 30)
	p, c, mem := newMemoryPool(t, shape, 2)

	ra, release := get(t, p, "a", nil)
	release()
	rb, releaseB := get(t, p, "b", nil) // b stays busy
	// a is idle and least recently used, b busy: c evicts a.
	rc, releaseC := get(t, p, "c", nil)
	wantLoaded(t, p, "c", "b")
	if !closed(ra) {
		t.Error("a still open after c was admitted")
	}
	if err := generate(rb); err != nil {
		t.Errorf("busy b stopped serving: %v", err)
	}
	// b is busy and older than c, but c is idle: loading a evicts c
	// rather than waiting for b.
	releaseC()
	ra2, release := get(t, p, "a", nil)
	release()
	wantLoaded(t, p, "a", "b")
	if !closed(rc) || closed(rb) || closed(ra2) {
		t.Errorf("closed: b %v, c %v, a %v; want only c", closed(rb), closed(rc), closed(ra2))
	}
	releaseB()
	if c.count("a") != 2 {
		t.Errorf("a loaded %d times, want 2", c.count("a"))
	}

	// A model that cannot fit even alone is refused, and nothing is
	// evicted for it.
	huge := Model{ID: "huge", Dir: tiny.Dir, Shape: fakeShape(mem.Budget())}
	p.opt.Resolve = func(string) (Model, error) { return huge, nil }
	var fe *fit.Error
	if _, _, err := p.Get(context.Background(), "huge"); !errors.As(err, &fe) {
		t.Errorf("Get(huge) = %v, want a *fit.Error", err)
	} else if !strings.Contains(err.Error(), "huge needs") {
		t.Errorf("error %q does not name the model", err)
	}
	wantLoaded(t, p, "b", "a")
}

// TestMemoryWaitsForBusy: when memory holds one model and it is busy, a
// load of another waits for its request, however many models the cap
// allows.
func TestMemoryWaitsForBusy(t *testing.T) {
	shape := fakeShape(1 << 30)
	p, _, _ := newMemoryPool(t, shape, 1)
	ra, releaseA := get(t, p, "a", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := p.Get(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get(b) while a is busy and memory is full = %v, want the context's error", err)
	}
	if err := generate(ra); err != nil {
		t.Fatalf("a stopped serving: %v", err)
	}
	releaseA()
	_, release := get(t, p, "b", nil)
	release()
	wantLoaded(t, p, "b")
	if !closed(ra) {
		t.Error("a still open")
	}
}

func TestBusyModelIsNotEvicted(t *testing.T) {
	p, c := newPool(t, maxModels(1))
	ra, releaseA := get(t, p, "a", nil)
	if st := p.Loaded(); len(st) != 1 || st[0].Active != 1 {
		t.Fatalf("Loaded() = %+v, want a with one active request", st)
	}
	got := make(chan error, 1)
	go func() {
		_, release, err := p.Get(context.Background(), "b")
		if err == nil {
			release()
		}
		got <- err
	}()
	// b waits while a's request runs; a still serves it.
	select {
	case err := <-got:
		t.Fatalf("b loaded while a was in use (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := generate(ra); err != nil {
		t.Fatalf("a stopped serving while b waited: %v", err)
	}
	releaseA()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("b never loaded after a was released")
	}
	if c.count("a") != 1 || c.count("b") != 1 {
		t.Errorf("loads: a %d, b %d", c.count("a"), c.count("b"))
	}
	wantLoaded(t, p, "b")
}

func TestWaitForBusyRespectsContext(t *testing.T) {
	p, _ := newPool(t, maxModels(1))
	_, release, err := p.Get(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := p.Get(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get(b) while a is busy = %v, want the context's error", err)
	}
}

func TestKeepAliveZeroUnloadsAfterRequest(t *testing.T) {
	p, _ := newPool(t)
	r, release := get(t, p, "a", dur(0))
	wantLoaded(t, p, "a") // in use: stays
	if err := generate(r); err != nil {
		t.Fatal(err)
	}
	release()
	wantLoaded(t, p)
	if !closed(r) {
		t.Error("a is still open")
	}
	// The server's default applies when a request does not say.
	p2, _ := newPool(t, func(o *Options) { o.KeepAlive = dur(0) })
	r, release = get(t, p2, "", nil)
	release()
	wantLoaded(t, p2)
	if !closed(r) {
		t.Error("the default model is still open")
	}
}

func TestKeepAliveExpires(t *testing.T) {
	p, _ := newPool(t)
	r, release := get(t, p, "a", dur(time.Millisecond))
	// The countdown starts only when the model goes idle.
	time.Sleep(20 * time.Millisecond)
	if err := generate(r); err != nil {
		t.Fatalf("a was unloaded while in use: %v", err)
	}
	wantLoaded(t, p, "a")
	before := time.Now()
	release()
	waitUnloaded(t, p, "a")
	if !closed(r) {
		t.Error("a left the pool but is still open")
	}

	// A later request with a long keep-alive replaces a short one.
	_, release = get(t, p, "b", dur(time.Millisecond))
	release()
	_, release = get(t, p, "b", dur(time.Hour))
	release()
	st := p.Loaded()
	if len(st) != 1 || st[0].ExpiresAt.Before(before.Add(time.Hour)) || st[0].ExpiresAt.After(time.Now().Add(time.Hour)) {
		t.Errorf("Loaded() = %+v, want b expiring in an hour", st)
	}
}

func TestNegativeKeepAliveKeeps(t *testing.T) {
	p, _ := newPool(t, func(o *Options) { o.KeepAlive = dur(time.Millisecond) })
	_, release := get(t, p, "a", dur(Forever))
	release()
	_, release = get(t, p, "b", nil) // the pool's default: 1ms
	release()
	waitUnloaded(t, p, "b")
	st := p.Loaded()
	if len(st) != 1 || st[0].ID != "a" || !st[0].ExpiresAt.IsZero() {
		t.Errorf("Loaded() = %+v, want a with no expiry", st)
	}
	p.mu.Lock()
	if s := p.slots[0]; s.timer != nil {
		t.Error("a model kept forever has a timer")
	}
	p.mu.Unlock()
}

func TestCloseUnloadsEverything(t *testing.T) {
	p, _ := newPool(t)
	var runners []*engine.Runner
	for _, name := range []string{"a", "b", "c"} {
		r, release := get(t, p, name, nil)
		release()
		runners = append(runners, r)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wantLoaded(t, p)
	for _, r := range runners {
		if !closed(r) {
			t.Errorf("%s still open after Close", r.Info().ID)
		}
	}
}

// TestConcurrentRequests mixes requests for three models, some with
// keep-alive 0, on a pool that holds two: no request ever sees its model
// closed under it, and the cap holds (counting checks it at every load).
func TestConcurrentRequests(t *testing.T) {
	p, _ := newPool(t, maxModels(2))
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := []string{"a", "b", "c"}[i%3]
			var keep *time.Duration
			if i%4 == 0 {
				keep = dur(0)
			}
			r, release, err := p.Acquire(context.Background(), name, keep)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			if err := generate(r); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}()
	}
	wg.Wait()
	if n := len(p.Loaded()); n > 2 {
		t.Errorf("%d models loaded, cap 2", n)
	}
}

func TestErrors(t *testing.T) {
	p, _ := newPool(t)
	if _, _, err := p.Get(context.Background(), "nope"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("unknown model: %v, want registry.ErrNotFound", err)
	}
	empty := New(Options{})
	if _, _, err := empty.Get(context.Background(), ""); !errors.Is(err, ErrNoModel) {
		t.Errorf("no default: %v, want ErrNoModel", err)
	}
	if _, _, err := empty.Get(context.Background(), "x"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("no resolver: %v, want registry.ErrNotFound", err)
	}
	broken := New(Options{Default: Model{ID: "missing", Dir: t.TempDir()}})
	for i := 0; i < 2; i++ { // a failed load is retried, not cached
		if _, _, err := broken.Get(context.Background(), ""); err == nil {
			t.Fatal("loading an empty directory succeeded")
		}
		if st := broken.Loaded(); len(st) != 0 {
			t.Errorf("a failed load left %+v", st)
		}
	}
}

func TestParseKeepAlive(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"5m", 5 * time.Minute},
		{"30s", 30 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"300", 300 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"0", 0},
		{"0s", 0},
		{"-1", Forever},
		{"-5m", Forever},
		{" 10s ", 10 * time.Second},
		{"-1e30", Forever},
	}
	for _, tt := range tests {
		got, err := ParseKeepAlive(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseKeepAlive(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "soon", "5 minutes", "NaN", "inf", "1e30", "9223372037", "3000000h"} {
		if _, err := ParseKeepAlive(bad); err == nil || !strings.Contains(err.Error(), "keep_alive") {
			t.Errorf("ParseKeepAlive(%q) error = %v, want one naming keep_alive", bad, err)
		}
	}
}
