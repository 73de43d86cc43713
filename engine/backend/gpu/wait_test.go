package gpu

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/cogentcore/webgpu/wgpu"
)

// wgpuWaitLimit is how long wgpu-core 0.19's blocking poll waits before it
// takes a submission for finished (wait.go).
const wgpuWaitLimit = 5 * time.Second

// TestLongSubmission reads the result of a submission that runs longer
// than wgpu's blocking wait. With the blocking poll, wgpu took the
// submission for finished after 5 s: the read returned a buffer the kernel
// had not written yet, and on lavapipe the driver's queue thread crashed
// (SIGSEGV, "Unsupported command") walking a command buffer wgpu had
// already freed. That is how a cold shader cache, which makes lavapipe
// compile kernels inside a submission, crashed CI.
func TestLongSubmission(t *testing.T) {
	b := newBackend(t, Options{})
	// Size the kernel on this machine: time a short run, scale it to about
	// 1.5× the limit, and double it until a run does pass the limit.
	groups := 16
	took, err := runSpin(b, groups)
	if err != nil {
		t.Fatal(err)
	}
	scale := 1.5 * wgpuWaitLimit.Seconds() / max(took.Seconds(), 1e-3)
	groups = int(min(float64(groups)*scale, maxSpinGroups))
	for try := 0; ; try++ {
		if took, err = runSpin(b, groups); err != nil {
			t.Fatal(err)
		}
		t.Logf("spin kernel, %d workgroups: %v", groups, took)
		if took > wgpuWaitLimit+wgpuWaitLimit/10 {
			break
		}
		if try == 3 || groups == maxSpinGroups {
			t.Skipf("could not make a submission run past %v on this adapter (last: %v)", wgpuWaitLimit, took)
		}
		groups = min(2*groups, maxSpinGroups)
	}
}

// spinSteps is how many words each invocation of spinSource's kernel
// adds: below 65535, since lavapipe ends any loop (nested loops counted
// together) after that many iterations.
const spinSteps = 128 * 256

// spinSource is a kernel of workgroups·64 invocations, each adding
// spinSteps words of a buffer of ones to its index: the compiler cannot
// fold loads it does not know, so no step is skipped. Invocations whose sum
// is right count themselves in O[0], the others in O[1].
func spinSource() string {
	return `@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read_write> O: array<atomic<u32>>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32) {
	var x = li;
	for (var i = 0u; i < 128u; i++) {
		for (var j = 0u; j < 256u; j++) {
			x += W[(i + j + li) & 255u];
		}
	}
	if (x == li + ` + fmt.Sprint(spinSteps) + `u) {
		atomicAdd(&O[0], 1u);
	} else {
		atomicAdd(&O[1], 1u);
	}
}
`
}

// maxSpinGroups is the most workgroups runSpin dispatches (in one
// dimension: the adapter's limit is at least 65535).
const maxSpinGroups = 65535

// runSpin runs spinSource's kernel over groups workgroups once, reads its
// counts back through the backend's read path (mapBytes) and checks them.
// It returns the wall time from submission to the counts in host memory.
func runSpin(b *Backend, groups int) (time.Duration, error) {
	pipe, err := b.pipeline("spin", spinSource())
	if err != nil {
		return 0, err
	}
	out, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "spin", Size: 256, Usage: wgpu.BufferUsageStorage | wgpu.BufferUsageCopySrc})
	if err != nil {
		return 0, err
	}
	defer dropBuffer(out)
	ones, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "spin ones", Size: 1024, Usage: wgpu.BufferUsageStorage, MappedAtCreation: true})
	if err != nil {
		return 0, err
	}
	defer dropBuffer(ones)
	w := ones.GetMappedRange(0, 1024)
	for i := 0; i < 1024; i += 4 {
		binary.LittleEndian.PutUint32(w[i:], 1)
	}
	ones.Unmap()
	read, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "spin read", Size: 256, Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
	if err != nil {
		return 0, err
	}
	defer dropBuffer(read)
	group, err := b.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: b.layout(pipe), Entries: []wgpu.BindGroupEntry{
		{Binding: 0, Buffer: ones, Size: 1024}, {Binding: 1, Buffer: out, Size: 256}}})
	if err != nil {
		return 0, err
	}
	defer group.Release()
	enc, err := b.dev.CreateCommandEncoder(nil)
	if err != nil {
		return 0, err
	}
	defer enc.Release()
	pass := enc.BeginComputePass(nil)
	pass.SetPipeline(pipe)
	pass.SetBindGroup(0, group, nil)
	pass.DispatchWorkgroups(uint32(groups), 1, 1)
	err = pass.End()
	pass.Release()
	if err == nil {
		err = enc.CopyBufferToBuffer(out, 0, read, 0, 256)
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
	raw := make([]byte, 256)
	if err := b.mapBytes(read, 0, raw); err != nil {
		return 0, err
	}
	took := time.Since(t0)
	right, wrong := binary.LittleEndian.Uint32(raw), binary.LittleEndian.Uint32(raw[4:])
	if want := uint32(64 * groups); right != want || wrong != 0 {
		return took, fmt.Errorf("after %v, %d invocations counted a right sum and %d a wrong one, want %d and 0 (read before the kernel finished?)", took, right, wrong, want)
	}
	return took, nil
}
