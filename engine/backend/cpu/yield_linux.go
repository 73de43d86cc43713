package cpu

import "syscall"

// osYield gives the CPU to another runnable thread, if there is one
// (sched_yield): a waiting thread that keeps spinning must not keep the
// thread it waits for, or another process, off the CPU.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
