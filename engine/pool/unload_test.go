package pool

import (
	"errors"
	"testing"

	"hearth/engine/registry"
)

func TestUnload(t *testing.T) {
	p, c := newPool(t)

	// A model that is not loaded stays unloaded: Unload never loads.
	if id, err := p.Unload("a"); err != nil || id != "a" {
		t.Fatalf(`Unload("a") = %q, %v`, id, err)
	}
	if n := c.count("a"); n != 0 {
		t.Errorf("Unload loaded a %d times", n)
	}
	wantLoaded(t, p)

	// An idle model is closed before Unload returns; the default by "".
	ra, release := get(t, p, "a", nil)
	release()
	rd, release := get(t, p, "", nil)
	release()
	if _, err := p.Unload("a"); err != nil {
		t.Fatal(err)
	}
	wantLoaded(t, p, "chat-tiny")
	if !closed(ra) {
		t.Error("a is still open")
	}
	if id, err := p.Unload(""); err != nil || id != "chat-tiny" {
		t.Fatalf(`Unload("") = %q, %v`, id, err)
	}
	wantLoaded(t, p)
	if !closed(rd) {
		t.Error("the default model is still open")
	}

	// A busy model finishes its request, then unloads.
	rb, release := get(t, p, "b", nil)
	if _, err := p.Unload("b"); err != nil {
		t.Fatal(err)
	}
	if err := generate(rb); err != nil {
		t.Errorf("the request under Unload failed: %v", err)
	}
	release()
	wantLoaded(t, p)
	if !closed(rb) {
		t.Error("b is still open after its request")
	}

	if _, err := p.Unload("nope"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf(`Unload("nope") = %v, want ErrNotFound`, err)
	}
}
