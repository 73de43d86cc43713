package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cogentcore/webgpu/wgpu"
)

// streamSource is a kernel that reads vecs vec4<u32> once: invocation l
// of workgroup g loads vectors g·wg·u + k·wg + l for k < u (each k one
// coalesced sweep). 256 invocations × 4 vectors read at the device's rate
// on the H200 (BenchmarkStream).
func streamSource(wg, u int, vecs uint64) string {
	var s strings.Builder
	fmt.Fprintf(&s, "@group(0) @binding(0) var<storage, read> W: array<vec4<u32>>;\n@group(0) @binding(1) var<storage, read_write> O: array<u32>;\n")
	fmt.Fprintf(&s, "@compute @workgroup_size(%d)\nfn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n", wg)
	fmt.Fprintf(&s, "\tlet base = (wid.x + wid.y * nwg.x) * %du + li;\n\tvar a = vec4<u32>(0u);\n", wg*u)
	for k := 0; k < u; k++ {
		fmt.Fprintf(&s, "\tlet v%d = W[min(base + %du, %du)];\n", k, k*wg, vecs-1)
	}
	for k := 0; k < u; k++ {
		fmt.Fprintf(&s, "\ta ^= v%d;\n", k)
	}
	// a store no input makes (kept so the loads are not optimised away)
	s.WriteString("\tif (a.x == 0x9e3779b9u && a.y == 1u) { O[0] = a.z; }\n}\n")
	return s.String()
}

// ReadBandwidth measures how fast kernels read device memory: about size
// bytes in buffers of at most the binding limit, each read once per pass by
// a streaming kernel (streamSource), one untimed pass first. It returns
// each timed pass's rate in bytes per second, from timestamps where the
// adapter has them (else the wall clock of a submission). This is the
// bound a decode step, which reads every weight once, is compared with.
func (b *Backend) ReadBandwidth(size int64, passes int) ([]float64, error) {
	if size <= 0 || passes <= 0 {
		return nil, errors.New("gpu: read bandwidth: size and passes must be positive")
	}
	const wg, u = 256, 4
	per := min(uint64(size), b.maxBind, b.limits.MaxBufferSize) &^ 4095
	if per < 1<<20 {
		per = 1 << 20
	}
	var bufs []*wgpu.Buffer
	defer func() {
		for _, buf := range bufs {
			dropBuffer(buf)
		}
	}()
	for total := uint64(0); total < uint64(size); total += per {
		buf, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "bandwidth", Size: per, Usage: wgpu.BufferUsageStorage})
		if err != nil {
			return nil, fmt.Errorf("gpu: read bandwidth: %w", err)
		}
		bufs = append(bufs, buf)
	}
	out, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "bandwidth", Size: 256, Usage: wgpu.BufferUsageStorage})
	if err != nil {
		return nil, fmt.Errorf("gpu: read bandwidth: %w", err)
	}
	bufs = append(bufs, out)
	pipe, err := b.pipeline("read bandwidth", streamSource(wg, u, per/16))
	if err != nil {
		return nil, err
	}
	groups := make([]*wgpu.BindGroup, len(bufs)-1)
	for i := range groups {
		if groups[i], err = b.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: b.layout(pipe), Entries: []wgpu.BindGroupEntry{
			{Binding: 0, Buffer: bufs[i], Size: per}, {Binding: 1, Buffer: out, Size: 256}}}); err != nil {
			return nil, fmt.Errorf("gpu: read bandwidth: %w", err)
		}
		defer groups[i].Release()
	}
	n := (per/16 + wg*u - 1) / (wg * u)
	grid := grid1(int(n), 1)
	timer, err := b.newPassTimer()
	if err != nil {
		return nil, fmt.Errorf("gpu: read bandwidth: %w", err)
	}
	defer timer.release()
	var rates []float64
	for p := -1; p < passes; p++ {
		d, err := timer.run(b, pipe, groups, grid)
		if err != nil {
			return nil, fmt.Errorf("gpu: read bandwidth: %w", err)
		}
		if p >= 0 && d > 0 {
			rates = append(rates, float64(per)*float64(len(groups))/d.Seconds())
		}
	}
	return rates, nil
}

// passTimer times one compute pass of dispatches: between two timestamps
// where the adapter has them, else by the wall clock of its submission.
type passTimer struct {
	qs        *wgpu.QuerySet
	res, read *wgpu.Buffer
}

func (b *Backend) newPassTimer() (*passTimer, error) {
	t := &passTimer{}
	if !b.timestamps {
		return t, nil
	}
	var err error
	if t.qs, err = b.dev.CreateQuerySet(&wgpu.QuerySetDescriptor{Label: "pass timer", Type: wgpu.QueryTypeTimestamp, Count: 2}); err == nil {
		if t.res, err = b.dev.CreateBuffer(&wgpu.BufferDescriptor{Size: 16, Usage: wgpu.BufferUsageQueryResolve | wgpu.BufferUsageCopySrc}); err == nil {
			t.read, err = b.dev.CreateBuffer(&wgpu.BufferDescriptor{Size: 16, Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
		}
	}
	if err != nil {
		t.release()
		return nil, err
	}
	return t, nil
}

func (t *passTimer) release() {
	if t.qs != nil {
		t.qs.Release()
	}
	dropBuffer(t.res)
	dropBuffer(t.read)
	*t = passTimer{}
}

// run dispatches pipe once per bind group, grid workgroups each, in one
// pass, and waits for it.
func (t *passTimer) run(b *Backend, pipe *wgpu.ComputePipeline, groups []*wgpu.BindGroup, grid [3]uint32) (time.Duration, error) {
	enc, err := b.dev.CreateCommandEncoder(nil)
	if err != nil {
		return 0, err
	}
	defer enc.Release()
	if t.qs != nil {
		enc.WriteTimestamp(t.qs, 0)
	}
	pass := enc.BeginComputePass(nil)
	pass.SetPipeline(pipe)
	for _, g := range groups {
		pass.SetBindGroup(0, g, nil)
		pass.DispatchWorkgroups(grid[0], grid[1], grid[2])
	}
	err = pass.End()
	pass.Release()
	if err == nil && t.qs != nil {
		enc.WriteTimestamp(t.qs, 1)
		enc.ResolveQuerySet(t.qs, 0, 2, t.res, 0)
		err = enc.CopyBufferToBuffer(t.res, 0, t.read, 0, 16)
	}
	var cmd *wgpu.CommandBuffer
	if err == nil {
		cmd, err = enc.Finish(nil)
	}
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	b.queue.Submit(cmd)
	cmd.Release()
	if t.qs == nil {
		b.waitIdle()
		return time.Since(t0), nil
	}
	raw := make([]byte, 16)
	if err := b.mapBytes(t.read, 0, raw); err != nil {
		return 0, err
	}
	return between(binary.LittleEndian.Uint64(raw), binary.LittleEndian.Uint64(raw[8:])), nil
}
