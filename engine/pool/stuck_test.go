package pool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/registry"
	"hearth/internal/testmodels"
)

// within runs f and fails the test if it has not returned after d: the
// regression these tests guard against is a wait that never ends.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// loopingModel is chat-tiny with the chat template of issue 20 that loops
// 10^10 times.
func loopingModel(t *testing.T) Model {
	t.Helper()
	loop := "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
	return Model{ID: "looping", Dir: testmodels.WithTemplate(t, "chat-tiny", loop)}
}

// TestUnloadCancelledRequest is issue 20's pool defect: a request whose
// chat template never ends is cancelled by its client; unloading its
// model (keep_alive 0) waited forever on the runner, and with the pool
// full every other model's request waited forever behind it. The render
// now stops with its request, so the unload completes and the next model
// loads.
func TestUnloadCancelledRequest(t *testing.T) {
	looping := loopingModel(t)
	p, _ := newPool(t, maxModels(1), func(o *Options) {
		o.Resolve = func(name string) (Model, error) {
			switch name {
			case "looping":
				return looping, nil
			case "a":
				return Model{ID: "a", Dir: tiny.Dir}, nil
			}
			return Model{}, registry.ErrNotFound
		}
	})
	zero := time.Duration(0)
	r, release := get(t, p, "looping", &zero)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := r.Generate(ctx, engine.Request{Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`), MaxTokens: 1}, func(engine.Delta) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Generate = %v, want context.Canceled", err)
	}
	within(t, 20*time.Second, "releasing the cancelled request (keep_alive 0 unloads)", release)
	if !closed(r) {
		t.Error("the looping model is still open")
	}
	within(t, 20*time.Second, "loading another model", func() {
		_, release := get(t, p, "a", nil)
		release()
	})
}

// TestStuckRunner: a runner that does not stop when it is closed (a
// request that ignores its cancellation) holds its room, but nothing waits
// on it forever: the release that unloads it, an Unload, and a load that
// needs its room each give up after UnloadWait, and once it stops the
// room is used again.
func TestStuckRunner(t *testing.T) {
	p, _ := newPool(t, maxModels(1), func(o *Options) { o.UnloadWait = 100 * time.Millisecond })
	unblock := make(chan struct{})
	p.close = func(r *engine.Runner) error {
		<-unblock
		return r.Close()
	}

	zero := time.Duration(0)
	_, release := get(t, p, "a", &zero)
	within(t, 10*time.Second, "release of a model whose runner does not stop", release)

	within(t, 10*time.Second, "a load that needs the stuck model's room", func() {
		_, rel, err := p.Acquire(context.Background(), "b", nil)
		if err == nil {
			rel()
			t.Error("b loaded while the stuck model holds the only room")
		} else if !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Acquire(b) = %v, want an error wrapping engine.ErrClosed", err)
		}
	})

	close(unblock)
	within(t, 10*time.Second, "the stuck runner's removal once it stopped", func() { waitEmpty(p) })
	within(t, 10*time.Second, "a load once the stuck runner stopped", func() {
		_, rel := get(t, p, "b", nil)
		rel()
	})
	wantLoaded(t, p, "b")

	// Unload of an idle model whose runner does not stop.
	again := make(chan struct{})
	p.close = func(r *engine.Runner) error {
		<-again
		return r.Close()
	}
	within(t, 10*time.Second, "Unload of a model whose runner does not stop", func() {
		if _, err := p.Unload("b"); !errors.Is(err, engine.ErrClosed) {
			t.Errorf("Unload(b) = %v, want an error wrapping engine.ErrClosed", err)
		}
	})
	close(again)
	within(t, 10*time.Second, "the stuck runner's removal once it stopped", func() { waitEmpty(p) })
}

// waitEmpty returns once no model is in the pool, loaded or unloading.
func waitEmpty(p *Pool) {
	for {
		p.mu.Lock()
		n := len(p.slots)
		p.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
