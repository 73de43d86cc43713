package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/cogentcore/webgpu/wgpu"

	"hearth/engine/tensor"
)

// KernelTime is the device time one kind of kernel took in the last
// profiled Run (SetProfile).
type KernelTime = tensor.KernelTime

// profiler brackets every kernel with timestamp queries. Timestamps are
// the adapter's ticks, which are nanoseconds on Vulkan (NVIDIA, lavapipe).
type profiler struct {
	b        *Backend
	qs       *wgpu.QuerySet
	cap      int
	resolved *wgpu.Buffer
	read     *wgpu.Buffer
	labels   []string
	n        int // timestamps written by the last Run
}

func newProfiler(b *Backend) *profiler { return &profiler{b: b} }

func (p *profiler) release() {
	if p.qs != nil {
		p.qs.Release()
	}
	dropBuffer(p.resolved)
	dropBuffer(p.read)
	p.qs, p.resolved, p.read = nil, nil, nil
}

func (p *profiler) ensure(n int) error {
	if n <= p.cap {
		return nil
	}
	if n > 4096 {
		return fmt.Errorf("profiling %d kernels in one run (at most 4095)", n-1)
	}
	p.release()
	qs, err := p.b.dev.CreateQuerySet(&wgpu.QuerySetDescriptor{Label: "profile", Type: wgpu.QueryTypeTimestamp, Count: uint32(n)})
	if err != nil {
		return err
	}
	p.qs, p.cap = qs, n
	size := uint64(n) * 8
	if p.resolved, err = p.b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "profile", Size: size, Usage: wgpu.BufferUsageQueryResolve | wgpu.BufferUsageCopySrc}); err != nil {
		return err
	}
	p.read, err = p.b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "profile read", Size: size, Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
	return err
}

// encode records each kernel in its own pass, a timestamp after each.
func (p *profiler) encode(enc *wgpu.CommandEncoder, pl *plan) error {
	p.n = len(pl.kernels) + 1
	if err := p.ensure(p.n); err != nil {
		return err
	}
	p.labels = p.labels[:0]
	if err := enc.WriteTimestamp(p.qs, 0); err != nil {
		return err
	}
	for k, kn := range pl.kernels {
		p.labels = append(p.labels, kn.label)
		if grid := kn.grid; grid[0] != 0 {
			pass := enc.BeginComputePass(nil)
			pass.SetPipeline(kn.pipe)
			pass.SetBindGroup(0, kn.group, nil)
			pass.DispatchWorkgroups(grid[0], grid[1], grid[2])
			err := pass.End()
			pass.Release()
			if err != nil {
				return err
			}
		}
		if err := enc.WriteTimestamp(p.qs, uint32(k+1)); err != nil {
			return err
		}
	}
	return nil
}

func (p *profiler) resolve(enc *wgpu.CommandEncoder) {
	enc.ResolveQuerySet(p.qs, 0, uint32(p.n), p.resolved, 0)
	enc.CopyBufferToBuffer(p.resolved, 0, p.read, 0, uint64(p.n)*8)
}

// between is the time from timestamp t0 to t1, 0 if t1 is not later.
// Timestamps are taken as nanoseconds: the binding does not expose the
// queue's timestamp period, which is 1 ns on the NVIDIA Vulkan driver
// measured (docs/benchmarks.md); other adapters may count otherwise.
func between(t0, t1 uint64) time.Duration {
	if t1 <= t0 {
		return 0
	}
	return time.Duration(t1 - t0)
}

// LastProfile waits for the last Run and returns its device time per kind
// of kernel, the largest first. It needs SetProfile(true).
func (b *Backend) LastProfile() ([]KernelTime, error) {
	p := b.stamp
	if p == nil || p.n == 0 {
		return nil, errors.New("profile: no profiled run (SetProfile(true) first)")
	}
	raw := make([]byte, p.n*8)
	if err := b.mapBytes(p.read, 0, raw); err != nil {
		return nil, err
	}
	stamp := func(i int) uint64 { return binary.LittleEndian.Uint64(raw[i*8:]) }
	by := map[string]*KernelTime{}
	for k, label := range p.labels {
		kt := by[label]
		if kt == nil {
			kt = &KernelTime{Label: label}
			by[label] = kt
		}
		kt.Count++
		kt.Time += between(stamp(k), stamp(k+1))
	}
	out := make([]KernelTime, 0, len(by))
	for _, kt := range by {
		out = append(out, *kt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time > out[j].Time })
	return out, nil
}
