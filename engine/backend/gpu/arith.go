package gpu

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cogentcore/webgpu/wgpu"
)

// fmaIters is how many iterations of its loop each invocation of the FMA
// kernel runs; fmaChains the independent vec4 accumulators it carries.
const fmaIters, fmaChains = 1024, 8

// fmaSource is a kernel that only does float32 fused multiply-adds:
// every invocation carries fmaChains independent vec4 accumulators
// through fmaIters iterations of c = fma(c, a, b) (a just under 1, so
// the values stay finite), 2·4·fmaChains FLOP an iteration, and stores
// nothing unless their sum is a value it never is (kept so the
// arithmetic is not optimised away).
func fmaSource() string {
	var s strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&s, format, args...) }
	p("@group(0) @binding(0) var<storage, read_write> O: array<f32>;\n")
	p("@compute @workgroup_size(256)\nfn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {\n")
	p("\tlet e = f32(li) * 1e-9;\n\tlet a = vec4<f32>(0.9999 + e, 0.9998, 0.9997 - e, 0.9996);\n\tlet b = vec4<f32>(1e-4, 2e-4 + e, 3e-4, 4e-4);\n")
	for i := 0; i < fmaChains; i++ {
		p("\tvar c%d = vec4<f32>(f32(wid.x + %du) * 1e-3, e, 0.5, %d.0);\n", i, i, i)
	}
	p("\tfor (var i = 0u; i < %du; i++) {\n", fmaIters)
	for i := 0; i < fmaChains; i++ {
		p("\t\tc%d = fma(c%d, a, b);\n", i, i)
	}
	p("\t}\n\tvar t = c0;\n")
	for i := 1; i < fmaChains; i++ {
		p("\tt += c%d;\n", i)
	}
	p("\tif (t.x == -1.25 && t.y == 3.5) { O[li] = t.z + t.w; }\n}\n")
	return s.String()
}

// FMARate measures how fast kernels do float32 arithmetic: a kernel of
// fused multiply-adds alone (fmaSource), about flops FLOP (2 per
// multiply-add) per pass, one untimed pass first. It returns each timed
// pass's rate in FLOP per second, from timestamps where the adapter has
// them (else the wall clock of a submission). This is the bound prefill,
// a matrix product, is compared with, as decode is with ReadBandwidth.
func (b *Backend) FMARate(flops float64, passes int) ([]float64, error) {
	if !(flops > 0) || passes <= 0 {
		return nil, errors.New("gpu: fma rate: flops and passes must be positive")
	}
	const perGroup = 256 * fmaIters * fmaChains * 4 * 2
	groups := max(1, int(flops/perGroup+0.5))
	out, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "fma rate", Size: 1024, Usage: wgpu.BufferUsageStorage})
	if err != nil {
		return nil, fmt.Errorf("gpu: fma rate: %w", err)
	}
	defer dropBuffer(out)
	pipe, err := b.pipeline("fma rate", fmaSource())
	if err != nil {
		return nil, err
	}
	bg, err := b.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: b.layout(pipe), Entries: []wgpu.BindGroupEntry{{Binding: 0, Buffer: out, Size: 1024}}})
	if err != nil {
		return nil, fmt.Errorf("gpu: fma rate: %w", err)
	}
	defer bg.Release()
	timer, err := b.newPassTimer()
	if err != nil {
		return nil, fmt.Errorf("gpu: fma rate: %w", err)
	}
	defer timer.release()
	var rates []float64
	for p := -1; p < passes; p++ {
		d, err := timer.run(b, pipe, []*wgpu.BindGroup{bg}, grid1(groups, 1))
		if err != nil {
			return nil, fmt.Errorf("gpu: fma rate: %w", err)
		}
		if p >= 0 && d > 0 {
			rates = append(rates, float64(groups)*perGroup/d.Seconds())
		}
	}
	return rates, nil
}
