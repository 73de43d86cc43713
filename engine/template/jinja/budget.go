package jinja

import (
	"context"
	"fmt"
	"time"
	"unsafe"
)

// Limits bound one render. A zero field takes its value from
// DefaultLimits.
type Limits struct {
	// CallDepth bounds macro and caller() calls nested inside each other
	// (a recursive macro).
	CallDepth int
	// Iterations bounds loop iterations, summed over the whole render
	// (nested loops multiply).
	Iterations int64
	// OutputBytes bounds the rendered text.
	OutputBytes int64
	// AllocBytes bounds the bytes of strings and list items the render
	// builds, summed over the render: concatenation, repetition, join,
	// range, macro and {% set %} block bodies, printed containers.
	AllocBytes int64
	// Time bounds the render's wall time.
	Time time.Duration
}

// DefaultLimits are generous for every chat template on the Hugging Face
// hub: real templates stay orders of magnitude below each of them.
func DefaultLimits() Limits {
	return Limits{
		CallDepth:   500,
		Iterations:  1_000_000,
		OutputBytes: 64 << 20,
		AllocBytes:  128 << 20,
		Time:        10 * time.Second,
	}
}

// withDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.CallDepth <= 0 {
		l.CallDepth = d.CallDepth
	}
	if l.Iterations <= 0 {
		l.Iterations = d.Iterations
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = d.OutputBytes
	}
	if l.AllocBytes <= 0 {
		l.AllocBytes = d.AllocBytes
	}
	if l.Time <= 0 {
		l.Time = d.Time
	}
	return l
}

// MaxNesting bounds how deeply the evaluator recurses: nested expressions
// and statements while evaluating, and nested lists and dicts while
// printing, comparing or encoding a value. It keeps every recursion far
// from the Go stack's limit. Python's own recursion limit (1000 frames)
// stops Jinja2 well before it.
const MaxNesting = 10000

// maxParseDepth bounds how deeply expressions and blocks nest in a
// template's source (parentheses, brackets, unary operators, blocks inside
// blocks).
const maxParseDepth = 500

// ValueBytes is what one list item costs against Limits.AllocBytes: the
// Value and the boxed payload its interface points to.
const ValueBytes = 2 * int64(unsafe.Sizeof(Value{}))

// stepsPerCheck is how many units of work pass between two looks at the
// clock and the context.
const stepsPerCheck = 1024

// LimitError reports a render stopped by one of its Limits.
type LimitError struct {
	Limit string // "call depth", "nesting", "loop iterations", "output bytes", "allocated bytes" or "time"
	Max   int64  // the limit; nanoseconds for "time"
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "call depth":
		return fmt.Sprintf("exceeded %d nested macro calls (call depth limit; is a macro recursing without end?)", e.Max)
	case "nesting":
		return fmt.Sprintf("exceeded %d levels of nesting", e.Max)
	case "loop iterations":
		return fmt.Sprintf("exceeded %d loop iterations", e.Max)
	case "output bytes":
		return fmt.Sprintf("exceeded %d bytes of output", e.Max)
	case "allocated bytes":
		return fmt.Sprintf("exceeded %d bytes of strings and lists built", e.Max)
	case "time":
		return fmt.Sprintf("exceeded the render time limit of %v", time.Duration(e.Max))
	}
	return fmt.Sprintf("exceeded the %s limit of %d", e.Limit, e.Max)
}

// Budget is one render's account against its Limits and its context. The
// evaluator charges it as it works; callables given the budget
// (NewBudgetCallable) charge it before they build large values. The first
// limit exceeded, or the context's end, sticks: every later charge returns
// the same error and the render stops with it. A Budget belongs to one
// render and is not safe for concurrent use. A nil *Budget charges nothing.
type Budget struct {
	ctx      context.Context
	lim      Limits
	deadline time.Time

	calls    int
	maxCalls int
	nest     int
	iters    int64
	out      int64
	alloc    int64
	steps    int
	err      error
}

// NewBudget starts an account for one render under ctx and lim (zero
// fields of lim take their defaults). The render time starts now.
func NewBudget(ctx context.Context, lim Limits) *Budget {
	if ctx == nil {
		ctx = context.Background()
	}
	lim = lim.withDefaults()
	return &Budget{ctx: ctx, lim: lim, deadline: time.Now().Add(lim.Time)}
}

// Limits returns the limits the budget enforces, defaults filled in.
func (b *Budget) Limits() Limits {
	if b == nil {
		return DefaultLimits()
	}
	return b.lim
}

// Used reports what the render has used so far, in the units of Limits:
// the deepest call nesting, loop iterations, output bytes, allocated bytes
// and elapsed time.
func (b *Budget) Used() Limits {
	if b == nil {
		return Limits{}
	}
	return Limits{
		CallDepth:   b.maxCalls,
		Iterations:  b.iters,
		OutputBytes: b.out,
		AllocBytes:  b.alloc,
		Time:        b.lim.Time - time.Until(b.deadline),
	}
}

// Err is the error that stopped the render: a *LimitError, the context's
// error, or nil while the budget holds.
func (b *Budget) Err() error {
	if b == nil {
		return nil
	}
	return b.err
}

// fail records err as the budget's sticky error unless one is already set,
// and returns the sticky error.
func (b *Budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

// Alloc charges n bytes about to be built (a string of n bytes, or n/ValueBytes list
// items). Charge before building: a value the budget refuses is never
// allocated.
func (b *Budget) Alloc(n int64) error {
	if b == nil {
		return nil
	}
	if b.err != nil {
		return b.err
	}
	if n < 0 || n > b.lim.AllocBytes-b.alloc {
		b.alloc = b.lim.AllocBytes
		return b.fail(&LimitError{Limit: "allocated bytes", Max: b.lim.AllocBytes})
	}
	b.alloc += n
	return b.Step()
}

// AllocItems charges n list items about to be built.
func (b *Budget) AllocItems(n int) error {
	return b.Alloc(mulSat(int64(n), ValueBytes))
}

// output charges n bytes appended to the rendered text.
func (b *Budget) output(n int) error {
	if b.err != nil {
		return b.err
	}
	if int64(n) > b.lim.OutputBytes-b.out {
		return b.fail(&LimitError{Limit: "output bytes", Max: b.lim.OutputBytes})
	}
	b.out += int64(n)
	return b.Step()
}

// Step counts one unit of work. Every so many units it looks at the clock
// and the context, so a render that loops or walks a large value notices
// its time limit or a cancelled request.
func (b *Budget) Step() error {
	if b == nil {
		return nil
	}
	if b.err != nil {
		return b.err
	}
	b.steps++
	if b.steps < stepsPerCheck {
		return nil
	}
	b.steps = 0
	return b.check()
}

// check looks at the context and the clock now.
func (b *Budget) check() error {
	if err := b.ctx.Err(); err != nil {
		return b.fail(fmt.Errorf("render stopped: %w", err))
	}
	if time.Now().After(b.deadline) {
		return b.fail(&LimitError{Limit: "time", Max: int64(b.lim.Time)})
	}
	return nil
}

// iteration counts one loop iteration.
func (b *Budget) iteration() error {
	if b.err != nil {
		return b.err
	}
	b.iters++
	if b.iters > b.lim.Iterations {
		return b.fail(&LimitError{Limit: "loop iterations", Max: b.lim.Iterations})
	}
	return b.Step()
}

// enterCall counts a macro or caller() call; leaveCall ends it.
func (b *Budget) enterCall() error {
	if b.err != nil {
		return b.err
	}
	b.calls++
	b.maxCalls = max(b.maxCalls, b.calls)
	if b.calls > b.lim.CallDepth {
		return b.fail(&LimitError{Limit: "call depth", Max: int64(b.lim.CallDepth)})
	}
	return b.check()
}

func (b *Budget) leaveCall() { b.calls-- }

// Nest checks a recursive walk over a value (printing, comparing,
// encoding) at depth levels down: past MaxNesting it records and returns
// the nesting limit's error. It also counts one step of work.
func (b *Budget) Nest(depth int) error {
	if depth > MaxNesting {
		err := &LimitError{Limit: "nesting", Max: MaxNesting}
		if b == nil {
			return err
		}
		return b.fail(err)
	}
	return b.Step()
}

// enter and leave count the evaluator's own recursion.
func (b *Budget) enter() error {
	b.nest++
	if b.nest > MaxNesting {
		return b.fail(&LimitError{Limit: "nesting", Max: MaxNesting})
	}
	return b.err
}

func (b *Budget) leave() { b.nest-- }

// mulSat is a*b for non-negative a and b, saturating instead of
// overflowing.
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// MulSat is a*b for non-negative a and b, saturating at 2^62 instead of
// overflowing: the size of n copies of something, for Alloc.
func MulSat(a, b int64) int64 { return mulSat(a, b) }
