package web

import (
	"errors"
	"sync"

	"hearth/engine"
)

// choices runs the n choices of one request (OpenAI's n) and adds up
// their usage. Where the runner batches (engine.Info.Parallel > 1) the
// choices are streams of their own, decoding together; elsewhere they run
// one after another, the prompt computed once through the prompt cache.
// Writes to the shared response go through lock, one at a time.
type choices struct {
	n      int
	mu     sync.Mutex
	usages []engine.Usage
	failed bool // a choice's failure was written; the others stop
}

func newChoices(n int) *choices {
	n = max(n, 1) // a job made in code may leave it 0
	return &choices{n: n, usages: make([]engine.Usage, n)}
}

// run calls each(i) for every choice, together when g batches, and
// returns the first error.
func (cs *choices) run(g generator, each func(i int) error) error {
	info, ok := g.(interface{ Info() engine.Info })
	if cs.n == 1 || !ok || info.Info().Parallel <= 1 {
		for i := range cs.n {
			if err := each(i); err != nil || cs.stopped() {
				return err
			}
		}
		return nil
	}
	errs := make([]error, cs.n)
	var wg sync.WaitGroup
	for i := range cs.n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = each(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// locked runs write alone among the choices' writes, unless a choice has
// failed, when it returns errChoiceFailed so that the others stop.
func (cs *choices) locked(write func() error) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.failed {
		return errChoiceFailed
	}
	return write()
}

// fail writes a choice's failure, the first one only.
func (cs *choices) fail(write func() error) error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.failed {
		return nil
	}
	cs.failed = true
	return write()
}

func (cs *choices) stopped() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.failed
}

// done records choice i's usage.
func (cs *choices) done(i int, u engine.Usage) {
	cs.mu.Lock()
	cs.usages[i] = u
	cs.mu.Unlock()
}

// total is the usage of all the choices: the prompt counts once, the
// generated tokens of every choice add up.
func (cs *choices) total() engine.Usage {
	var t engine.Usage
	for i, u := range cs.usages {
		t = addUsage(t, u, i)
	}
	return t
}

// errChoiceFailed stops a choice after another one's failure was written.
var errChoiceFailed = errors.New("another choice of the request failed")
