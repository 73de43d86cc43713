//go:build !linux

package cpu

// osYield does nothing where there is no sched_yield wrapper; spinning
// threads then rely on the OS's preemption alone.
func osYield() {}
