package gpu

import (
	"fmt"
	"strings"
)

// mvSource is the WGSL of a matrix-vector kernel for at most 16 rows of x
// against up to three weights of the same kind and width K (cols % 32 == 0).
//
// A workgroup of 256 invocations computes RPW = (256/Lanes)·Rows output
// rows of one weight: Lanes invocations stride over the 32-element blocks
// of a row, each invocation carrying Rows rows (so one load of x serves
// Rows weight rows) and MB rows of x, then the Lanes partial sums of every
// row are added in workgroup memory. Workgroups [0, wg0) serve weight 0,
// [wg0, wg1) weight 1, [wg1, wgt) weight 2; grid z walks x in steps of MB.
//
// Options fuse the graph's neighbours into the kernel: an RMSNorm prologue
// (x normalised once per workgroup into workgroup memory), Dual (output
// silu(x·w0)·(x·w1), the gated MLP), a bias vector and a residual per
// output.
type mvSpec struct {
	K      int
	Lanes  int
	Rows   int
	MB     int
	Shared bool // x (one row) staged in workgroup memory
	RMS    bool // normalise the staged x by nw (needs Shared)
	Dual   bool
	W      []accessor  // w0, w1, w2
	Norm   *accessor   // nw
	Bias   []*accessor // per output, or nil
	Out    []int       // binding of O<i>
	Res    []int       // binding of RES<i>, or -1
	XBind  int
}

func (s *mvSpec) rowsPerWG() int { return 256 / s.Lanes * s.Rows }

// redFloats is the workgroup reduction buffer's length.
func (s *mvSpec) redFloats() int {
	n := 256 * s.Rows * s.MB
	if s.Dual {
		n *= 2
	}
	return n
}

func (s *mvSpec) source() string {
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p(`struct Params {
	m: u32, n0: u32, n1: u32, n2: u32,
	wg0: u32, wg1: u32, wgt: u32, eps: f32,
	shift: f32, off0: u32, off1: u32, off2: u32,
	stride0: u32, stride1: u32, stride2: u32, col0: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(%d) var<storage, read> X: array<vec4<f32>>;
`, s.XBind)
	for _, a := range s.W {
		w.WriteString(a.String())
	}
	if s.Norm != nil {
		w.WriteString(s.Norm.String())
	}
	for i := range s.Out {
		if s.Bias[i] != nil {
			w.WriteString(s.Bias[i].String())
		}
		p("@group(0) @binding(%d) var<storage, read_write> O%d: array<f32>;\n", s.Out[i], i)
		if s.Res[i] >= 0 {
			p("@group(0) @binding(%d) var<storage, read> RES%d: array<f32>;\n", s.Res[i], i)
		}
	}
	k4 := s.K / 4
	p("const K4: u32 = %du;\nconst KB: u32 = %du;\n", k4, s.K/32)
	p("var<workgroup> red: array<f32, %d>;\n", s.redFloats())
	if s.Shared {
		p("var<workgroup> xsh: array<vec4<f32>, %d>;\n", k4)
		p("fn xload(b: u32, m0: u32, i: u32) -> vec4<f32> { return xsh[i]; }\n")
	} else {
		p("fn xload(b: u32, m0: u32, i: u32) -> vec4<f32> { return X[min(m0 + b, P.m - 1u) * K4 + i]; }\n")
	}
	slots := s.Rows * s.MB
	if s.Dual {
		slots *= 2
	}
	for i := range s.Out {
		s.accFunc(&w, i, slots)
		s.storeFunc(&w, i)
	}
	p(`@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let wg = wid.x + wid.y * nwg.x;
	if (wg >= P.wgt) {
		return;
	}
	let m0 = wid.z * %du;
`, s.MB)
	if s.Shared {
		p("\tvar ss = 0.0;\n\tfor (var i = li; i < K4; i += 256u) {\n\t\tlet v = X[m0 * K4 + i];\n\t\txsh[i] = v;\n\t\tss += dot(v, v);\n\t}\n")
		if s.RMS {
			p(`	red[li] = ss;
	workgroupBarrier();
	for (var st = 128u; st > 0u; st >>= 1u) {
		if (li < st) {
			red[li] += red[li + st];
		}
		workgroupBarrier();
	}
	let inv = 1.0 / sqrt(red[0] / %d.0 + P.eps);
	workgroupBarrier();
`, s.K)
			if s.Norm != nil {
				p(`	for (var i = li; i < K4; i += 256u) {
		let c = 4u * i;
		let nw = vec4<f32>(nw_get(0u, c), nw_get(0u, c + 1u), nw_get(0u, c + 2u), nw_get(0u, c + 3u));
		xsh[i] = xsh[i] * inv * (nw + vec4<f32>(P.shift));
	}
`)
			} else {
				p("\tfor (var i = li; i < K4; i += 256u) {\n\t\txsh[i] = xsh[i] * inv;\n\t}\n")
			}
		}
		p("\tworkgroupBarrier();\n")
	}
	// Which output a workgroup serves is uniform across it; the barriers
	// stay outside the branches.
	p("\tvar which = 0u;\n\tvar lwg = wg;\n")
	switch len(s.Out) {
	case 2:
		p("\tif (wg >= P.wg0) {\n\t\twhich = 1u;\n\t\tlwg = wg - P.wg0;\n\t}\n")
	case 3:
		p("\tif (wg >= P.wg1) {\n\t\twhich = 2u;\n\t\tlwg = wg - P.wg1;\n\t} else if (wg >= P.wg0) {\n\t\twhich = 1u;\n\t\tlwg = wg - P.wg0;\n\t}\n")
	}
	p("\tvar a: array<f32, %d>;\n", slots)
	for i := range s.Out {
		if i == 0 {
			p("\tif (which == 0u) {\n")
		} else {
			p("\t} else if (which == %du) {\n", i)
		}
		p("\t\ta = acc%d(lwg, li, m0);\n", i)
	}
	p("\t}\n")
	p(`	for (var k = 0u; k < %du; k++) {
		red[k * 256u + li] = a[k];
	}
	workgroupBarrier();
	let lane = li %% %du;
	for (var st = %du; st > 0u; st >>= 1u) {
		if (lane < st) {
			for (var k = 0u; k < %du; k++) {
				red[k * 256u + li] += red[k * 256u + li + st];
			}
		}
		workgroupBarrier();
	}
	if (lane != 0u) {
		return;
	}
`, slots, s.Lanes, s.Lanes/2, slots)
	for i := range s.Out {
		if i == 0 {
			p("\tif (which == 0u) {\n")
		} else {
			p("\t} else if (which == %du) {\n", i)
		}
		p("\t\tstore%d(lwg, li, m0);\n", i)
	}
	p("\t}\n}\n")
	return w.String()
}

// accFunc writes acc<i>: this invocation's partial sums for the rows of
// output i it carries ([a..., u...] for Dual). The row and batch loops have
// constant trip counts, which GPU compilers unroll; as loops they keep the
// shader small.
func (s *mvSpec) accFunc(w *strings.Builder, i, slots int) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	R, MB, L := s.Rows, s.MB, s.Lanes
	p("fn acc%d(lwg: u32, li: u32, m0: u32) -> array<f32, %d> {\n", i, slots)
	p("\tlet lane = li %% %du;\n\tlet row0 = lwg * %du + (li / %du) * %du;\n\tlet n = P.n%d;\n", L, s.rowsPerWG(), L, R, i)
	p("\tvar a: array<f32, %d>;\n", slots)
	w0 := s.W[i].Name
	if s.Dual {
		w0 = s.W[0].Name
	}
	p("\tfor (var blk = lane; blk < KB; blk += %du) {\n", L)
	p("\t\tfor (var b = 0u; b < %du; b++) {\n", MB)
	for j := 0; j < 8; j++ {
		p("\t\t\tlet x%d = xload(b, m0, blk * 8u + %du);\n", j, j)
	}
	p("\t\t\tlet t = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;\n\t\t\tlet s = t.x + t.y + t.z + t.w;\n")
	p("\t\t\tfor (var r = 0u; r < %du; r++) {\n\t\t\t\tlet row = min(row0 + r, n - 1u);\n", R)
	p("\t\t\t\ta[r * %du + b] += %s_dot(row, blk, x0, x1, x2, x3, x4, x5, x6, x7, s);\n", MB, w0)
	if s.Dual {
		p("\t\t\t\ta[%du + r * %du + b] += %s_dot(row, blk, x0, x1, x2, x3, x4, x5, x6, x7, s);\n", R*MB, MB, s.W[1].Name)
	}
	p("\t\t\t}\n\t\t}\n\t}\n\treturn a;\n}\n")
}

// storeFunc writes store<i>: invocation 0 of a row group writes the reduced
// sums of its rows, with the epilogue applied.
func (s *mvSpec) storeFunc(w *strings.Builder, i int) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	R, MB, L := s.Rows, s.MB, s.Lanes
	S := R * MB
	p("fn store%d(lwg: u32, li: u32, m0: u32) {\n", i)
	p("\tlet row0 = lwg * %du + (li / %du) * %du;\n\tlet n = P.n%d;\n", s.rowsPerWG(), L, R, i)
	p("\tfor (var k = 0u; k < %du; k++) {\n", S)
	p("\t\tlet row = row0 + k / %du;\n\t\tlet mr = m0 + k %% %du;\n", MB, MB)
	p("\t\tif (row >= n || mr >= P.m) {\n\t\t\tcontinue;\n\t\t}\n")
	if s.Dual {
		p("\t\tlet g = red[k * 256u + li];\n\t\tvar v = g / (1.0 + exp(-g)) * red[(k + %du) * 256u + li];\n", S)
	} else {
		p("\t\tvar v = red[k * 256u + li];\n")
	}
	if s.Bias[i] != nil {
		p("\t\tv = v + %s_get(0u, row);\n", s.Bias[i].Name)
	}
	if s.Res[i] >= 0 {
		p("\t\tv = RES%d[mr * P.stride%d + P.col0 + row] + v;\n", i, i)
	}
	p("\t\tO%d[P.off%d + mr * P.stride%d + P.col0 + row] = v;\n\t}\n}\n", i, i, i)
}
