package gpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cogentcore/webgpu/wgpu"
)

// BenchmarkDequantALU measures how fast this adapter runs the 4-bit dot
// product's arithmetic alone, without weight loads: every invocation
// dequantizes words made in registers (changed each iteration, so nothing
// is hoisted) against x held in registers or read from workgroup memory the
// way the row kernel reads it, R rows per read of x. Logged: weights per
// second, and the weight bytes per second that rate would consume (4-bit
// levels plus a 4-byte scale pair per 64) — the matrix-vector kernel's
// ceiling from arithmetic on this adapter.
//
// Forms: "cur" is quantDot (level and-or'ed into the mantissa of 2²³,
// subtract, fused multiply-add); "shift" moves each level to the top of
// the mantissa of 1.0 (shift, and-or, fused multiply-add; Σx subtracted per
// block); "nosub" is cur without the subtraction (wrong results: it prices
// the subtraction).
func BenchmarkDequantALU(b *testing.B) {
	be := newBackend(b, Options{})
	if !be.timestamps {
		b.Skip("adapter has no timestamp queries")
	}
	out := mustBuf(b, be, 4<<20, wgpu.BufferUsageStorage)
	defer out.Release()
	wgs, iters := 132*8, 256
	if be.info.Emulated { // lavapipe: a token run (the full one takes minutes)
		wgs, iters = 4, 8
	}
	for _, form := range []string{"cur", "shift", "nosub"} {
		for _, shared := range []bool{false, true} {
			for _, r := range []int{1, 2, 4} {
				src := aluSource(form, r, shared, iters)
				d := timePass(b, be, src, 4, func(int) []wgpu.BindGroupEntry {
					return []wgpu.BindGroupEntry{{Binding: 0, Buffer: out, Size: 4 << 20}}
				}, [3]uint32{uint32(wgs), 1, 1})
				weights := float64(wgs) * 256 * float64(iters) * float64(r) * 32
				rate := weights / d.Seconds()
				b.Logf("dequant %-5s R%d x %-7s %8.2f µs %6.2f T weights/s = %5.2f TB/s of 4-bit weights", form, r, map[bool]string{false: "regs", true: "shared"}[shared], float64(d.Nanoseconds())/1e3, rate/1e12, rate*(0.5+4.0/64)/1e12)
			}
		}
	}
}

// aluSource is BenchmarkDequantALU's kernel.
func aluSource(form string, rows int, shared bool, iters int) string {
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("@group(0) @binding(0) var<storage, read_write> O: array<f32>;\nvar<workgroup> xsh: array<vec4<f32>, 1024>;\n")
	p("fn dotr(r: array<vec4<u32>, 1>, sr: u32, %s) -> f32 {\n", dotArgs)
	switch form {
	case "cur", "nosub":
		a := accessor{Name: "w", Kind: q4Kind, Prescaled: true}
		body := a.quantDot()
		if form == "nosub" {
			if body = strings.ReplaceAll(body, " | M) - F,", " | M),"); body == a.quantDot() {
				panic("aluSource: quantDot no longer subtracts as nosub expects")
			}
		}
		w.WriteString(body)
	case "shift":
		p("\tlet sb = vec2<f32>(bitcast<f32>(sr << 16u), bitcast<f32>(sr & 0xffff0000u));\n\tvar d = vec4<f32>(0.0);\n")
		p("\tlet E = vec4<u32>(0x3F800000u);\n\tlet K = vec4<u32>(0x00780000u);\n")
		for j := 0; j < 8; j++ {
			word := fmt.Sprintf("r[0].%c", "xyzw"[j/2])
			if j%2 == 0 {
				p("\td = fma(bitcast<vec4<f32>>(((vec4<u32>(%[1]s) << vec4<u32>(19u, 15u, 11u, 7u)) & K) | E), x%[2]d, d);\n", word, j)
			} else {
				p("\td = fma(bitcast<vec4<f32>>((vec4<u32>(%[1]s << 3u, %[1]s >> 1u, %[1]s >> 5u, %[1]s >> 9u) & K) | E), x%[2]d, d);\n", word, j)
			}
		}
		p("\treturn (((d.x + d.y) + (d.z + d.w)) - xs) * (16.0 * sb.x) + xs * sb.y;\n}\n")
	}
	p("@compute @workgroup_size(256)\nfn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {\n")
	p("\tfor (var i = li; i < 1024u; i += 256u) {\n\t\txsh[i] = vec4<f32>(f32(i) * 0.001, f32(i) * -0.002, 0.5, f32(wid.x) * 0.01);\n\t}\n\tworkgroupBarrier();\n")
	for r := 0; r < rows; r++ {
		p("\tlet w%d = vec4<u32>(li * 2654435761u + %du, wid.x * 40503u, li ^ wid.x, li + %du);\n\tvar a%d = 0.0;\n", r, r, r*7, r)
	}
	if !shared {
		for j := 0; j < 8; j++ {
			p("\tlet x%d = xsh[(li * 8u + %du) & 1023u];\n", j, j)
		}
		p("\tlet xs = x0.x + x7.w;\n")
	}
	p("\tlet lane = li & 15u;\n\tfor (var it = 0u; it < %du; it++) {\n", iters)
	if shared {
		p("\t\tlet lb = (it * 16u + lane) & 127u;\n\t\tlet o = lb * 8u;\n\t\tlet sw = lb & 7u;\n")
		for j := 0; j < 8; j++ {
			p("\t\tlet x%d = xsh[o + (%du ^ sw)];\n", j, j)
		}
		p("\t\tlet xs = x0.x + x7.w;\n")
	}
	for r := 0; r < rows; r++ {
		p("\t\ta%[1]d += dotr(array<vec4<u32>, 1>(w%[1]d + vec4<u32>(it)), w%[1]d.x ^ it, x0, x1, x2, x3, x4, x5, x6, x7, xs);\n", r)
	}
	p("\t}\n\tvar t = 0.0;\n")
	for r := 0; r < rows; r++ {
		p("\tt += a%d;\n", r)
	}
	p("\tO[(wid.x * 256u + li) & 1048575u] = t;\n}\n")
	return w.String()
}
