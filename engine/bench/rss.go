package bench

import (
	"os"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// rssSampler follows the process's resident set size while a benchmark
// runs and keeps the largest value seen. Sampling (rather than the kernel's
// lifetime high-water mark) leaves out what the process did before: the
// bandwidth buffer and the generation of a synthetic checkpoint. File-backed
// pages of the mmap'd weights count, as they do in Activity Monitor and top.
type rssSampler struct {
	p      *process.Process
	mu     sync.Mutex
	peak   int64
	paused bool
	stop   chan struct{}
	done   chan struct{}
}

// rssInterval is how often the sampler looks.
const rssInterval = 20 * time.Millisecond

func startRSS() *rssSampler {
	p, err := process.NewProcess(int32(os.Getpid()))
	if err != nil {
		return nil
	}
	s := &rssSampler{p: p, stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(rssInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *rssSampler) sample() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused {
		return
	}
	if mi, err := s.p.MemoryInfo(); err == nil {
		s.peak = max(s.peak, int64(mi.RSS))
	}
}

// pause stops sampling (while something that is not the model's memory is
// allocated); resume starts it again.
func (s *rssSampler) pause() {
	if s != nil {
		s.sample()
		s.mu.Lock()
		s.paused = true
		s.mu.Unlock()
	}
}

func (s *rssSampler) resume() {
	if s != nil {
		s.mu.Lock()
		s.paused = false
		s.mu.Unlock()
	}
}

// finish stops sampling and returns the peak in bytes (0 when RSS could not
// be read on this platform).
func (s *rssSampler) finish() int64 {
	if s == nil {
		return 0
	}
	close(s.stop)
	<-s.done
	s.sample()
	return s.peak
}
