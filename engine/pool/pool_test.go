package pool

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/registry"
	"hearth/internal/testmodels"
)

var tiny = Model{ID: "chat-tiny", Dir: filepath.Join(testmodels.Root(), "chat-tiny")}

// counting wraps engine.Open: it counts loads per id and checks that the
// previous model was closed before the next one loads.
type counting struct {
	mu         sync.Mutex
	opens      map[string]int
	last       *engine.Runner
	violations []string
}

func (c *counting) Open(dir string, opt engine.RunnerOptions) (*engine.Runner, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil {
		_, err := c.last.Generate(context.Background(), engine.Request{Prompt: "x", MaxTokens: 1}, func(engine.Delta) error { return nil })
		if !errors.Is(err, engine.ErrClosed) {
			c.violations = append(c.violations, fmt.Sprintf("loading %s while %s is still open", opt.ID, c.last.Info().ID))
		}
	}
	r, err := engine.Open(dir, opt)
	if err != nil {
		return nil, err
	}
	c.opens[opt.ID]++
	c.last = r
	return r, nil
}

func (c *counting) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opens[id]
}

// newPool serves chat-tiny as the default and, under the names "a" and
// "b", again (two ids of one checkpoint: enough to switch models).
func newPool(t *testing.T) (*Pool, *counting) {
	t.Helper()
	c := &counting{opens: map[string]int{}}
	p := New(Options{
		Runner:  engine.RunnerOptions{Options: engine.Options{Threads: 1}},
		Default: tiny,
		Resolve: func(name string) (Model, error) {
			if name == "a" || name == "b" {
				return Model{ID: name, Dir: tiny.Dir}, nil
			}
			return Model{}, registry.ErrNotFound
		},
		Open: c.Open,
	})
	t.Cleanup(func() {
		p.Close()
		for _, v := range c.violations {
			t.Error(v)
		}
	})
	return p, c
}

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

func TestSwitchWaitsForRequests(t *testing.T) {
	p, c := newPool(t)
	ra, releaseA, err := p.Get(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
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
	if _, err := ra.Generate(context.Background(), engine.Request{Prompt: "hi", MaxTokens: 2}, func(engine.Delta) error { return nil }); err != nil {
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
	if st := p.Loaded(); len(st) != 1 || st[0].ID != "b" {
		t.Errorf("Loaded() = %+v, want only b", st)
	}
}

func TestSwitchWaitRespectsContext(t *testing.T) {
	p, _ := newPool(t)
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
