// Judging an estimate against this machine's memory: fits, tight, or
// won't fit, and the largest context that still fits.

package fit

import (
	"fmt"

	"github.com/shirou/gopsutil/v4/mem"
)

// Memory is what the machine can give a model. Tests build it directly;
// System reads it from the operating system.
type Memory struct {
	TotalBytes     int64 // physical memory
	AvailableBytes int64 // free now, counting reclaimable caches
	// WorkingSetBytes is the GPU's working-set limit (Metal's
	// recommendedMaxWorkingSetSize on macOS); 0 when there is none.
	WorkingSetBytes int64
}

// System reads physical and free memory (gopsutil) and, on macOS, the
// Metal working-set limit.
func System() (Memory, error) {
	v, err := mem.VirtualMemory()
	if err != nil {
		return Memory{}, fmt.Errorf("read memory: %w", err)
	}
	m := Memory{TotalBytes: int64(v.Total), AvailableBytes: int64(v.Available)}
	if ws, ok := metalWorkingSet(); ok {
		m.WorkingSetBytes = int64(ws)
	}
	return m, nil
}

// Budget is the most a model may use: physical memory less a reserve for
// the system (an eighth, at least 1 GiB), and no more than the GPU
// working-set limit when there is one.
func (m Memory) Budget() int64 {
	reserve := max(m.TotalBytes/8, 1<<30)
	b := max(m.TotalBytes-reserve, 0)
	if m.WorkingSetBytes > 0 {
		b = min(b, m.WorkingSetBytes)
	}
	return b
}

// Status is a verdict's one-word answer.
type Status string

const (
	// Fits: the model needs at most 90% of the memory free now.
	Fits Status = "fits"
	// Tight: it is within the budget, but loading it will push other
	// programs into compression or swap.
	Tight Status = "tight"
	// WontFit: it needs more than the budget; admission refuses it.
	WontFit Status = "won't fit"
)

// Verdict is a model judged against a machine at one context length.
type Verdict struct {
	Status         Status
	ContextTokens  int
	NeedBytes      int64
	AvailableBytes int64 // free now
	BudgetBytes    int64 // the most a model may use (Memory.Budget)
	TotalBytes     int64 // physical memory
	// MaxContextTokens is the largest context (see MaxContext) at which
	// the model stays within the budget; 0 when even one token of context
	// does not.
	MaxContextTokens int
}

// Check estimates s at opt's context and judges it against m.
func Check(s Shape, opt Options, m Memory) Verdict {
	b := Estimate(s, opt)
	need := b.Total()
	v := Verdict{
		ContextTokens:    b.ContextTokens,
		NeedBytes:        need,
		AvailableBytes:   m.AvailableBytes,
		BudgetBytes:      m.Budget(),
		TotalBytes:       m.TotalBytes,
		MaxContextTokens: MaxContext(s, opt, m.Budget()),
	}
	switch {
	case need > v.BudgetBytes:
		v.Status = WontFit
	case need*10 <= m.AvailableBytes*9:
		v.Status = Fits
	default:
		v.Status = Tight
	}
	return v
}

// MaxContext returns the largest context, up to s.MaxContextTokens (or
// opt.ContextTokens when that is larger or the model's limit is unknown),
// whose estimate is at most limit bytes, rounded down to a multiple of 1024
// from 4096 up (of 256 from 256 up); 0 when none fits.
func MaxContext(s Shape, opt Options, limit int64) int {
	hi := max(s.MaxContextTokens, opt.ContextTokens)
	if hi <= 0 {
		hi = 1 << 20
	}
	need := func(ctx int) int64 {
		o := opt
		o.ContextTokens = ctx
		return Estimate(s, o).Total()
	}
	if need(1) > limit {
		return 0
	}
	if need(hi) <= limit {
		return hi
	}
	lo := 1 // need(lo) ≤ limit < need(hi); the estimate grows with ctx
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if need(mid) <= limit {
			lo = mid
		} else {
			hi = mid
		}
	}
	switch {
	case lo >= 4096:
		lo -= lo % 1024
	case lo >= 256:
		lo -= lo % 256
	}
	return lo
}

// Error is an admission refusal: the model needs more than the budget at
// the context asked for.
type Error struct {
	Model            string
	ContextTokens    int
	NeedBytes        int64
	BudgetBytes      int64
	MaxContextTokens int // 0 when no context fits
	WeightBytes      int64
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s needs %s at %d tokens of context; %s is available", e.Model, FormatBytes(e.NeedBytes), e.ContextTokens, FormatBytes(e.BudgetBytes))
	if e.MaxContextTokens > 0 {
		return s + fmt.Sprintf("; it fits at %d tokens", e.MaxContextTokens)
	}
	return s + fmt.Sprintf("; its weights alone are %s, so it does not fit at any context length", FormatBytes(e.WeightBytes))
}

// Admit checks s against m and returns an *Error when it won't fit. A
// tight verdict is admitted: the caller may warn.
func Admit(name string, s Shape, opt Options, m Memory) (Verdict, error) {
	v := Check(s, opt, m)
	if v.Status != WontFit {
		return v, nil
	}
	return v, &Error{
		Model: name, ContextTokens: v.ContextTokens, NeedBytes: v.NeedBytes,
		BudgetBytes: v.BudgetBytes, MaxContextTokens: v.MaxContextTokens, WeightBytes: s.WeightBytes,
	}
}

// FormatBytes prints n in decimal units with one decimal ("6.1 GB",
// "512.0 MB"), as macOS and the Hugging Face hub do.
func FormatBytes(n int64) string {
	switch f := float64(n); {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", f/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", f/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", f/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
