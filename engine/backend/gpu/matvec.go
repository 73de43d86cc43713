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
// Rows weight rows) and MB rows of x. Workgroups [0, wg0) serve weight 0,
// [wg0, wg1) weight 1, [wg1, wgt) weight 2; grid z walks x in steps of MB.
//
// With one row of x (decode) x is staged in workgroup memory, CB blocks at
// a time (all of them when they fit): scaled by the power of two the
// quantized dot product expects (so the inner loop does not scale it), with
// each block's Σx stored beside it, and with the vec4s of a block stored in
// a rotated order (swizzled by the block index) so that the eight lanes of
// a quarter warp, which read eight consecutive blocks, hit distinct banks.
// Every lane runs the same constant number of block iterations, loading
// the weights of B of them (batch) before their arithmetic. The Lanes
// partial sums of an output are then added by one invocation after a
// single barrier.
//
// With Col > 0 the column kernel (colFit, colSource) serves one row of x
// instead.
//
// Options fuse the graph's neighbours into the kernel: an RMSNorm (x times
// the norm weight staged once per workgroup, its 1/rms applied to the sums
// at the end: rmsStage), Dual (output silu(x·w0)·(x·w1), the gated MLP), a
// bias vector and a residual per output, and a rotary embedding of an
// output (mvRope).
type mvSpec struct {
	K     int
	Lanes int
	Rows  int
	B     int // block iterations per load batch (shared); see batch
	MB    int
	CB    int  // blocks of x per staged chunk; 0: x not staged (shared)
	RMS   bool // normalise the staged x by nw (needs shared with one chunk)
	Dual  bool
	W     []accessor  // w0, w1, w2
	Norm  *accessor   // nw
	Bias  []*accessor // per output, or nil
	Rope  []*mvRope   // per output, or nil (one row of x, the row kernel)
	Out   []int       // binding of O<i>
	Res   []int       // binding of RES<i>, or -1
	XBind int
	Col   int // column kernel: rows per workgroup; 0: the row kernel (colFit)
	T     int // column kernel: invocations per workgroup
	NB    int // column kernel: blocks of a row per invocation
}

// mvRope rotates an output of the row kernel (one row of x) the way a
// RoPE node of one token does: the kernel reduces the two rows of each
// rotated pair in neighbouring invocations (logical rows 2p and 2p+1,
// mapped to the weight rows of the pair by rphys), which swap their sums
// through workgroup memory and store the rotated values.
type mvRope struct {
	HD, Dims int  // head size; the leading dims of a head that rotate
	Trad     bool // pairs (2j, 2j+1) rather than (j, j+Dims/2)
	Bind     int  // binding of the (cos, sin) table of the token
}

// roped reports whether any output is rotated.
func (s *mvSpec) roped() bool {
	for _, r := range s.Rope {
		if r != nil {
			return true
		}
	}
	return false
}

// ropeFuncs writes, for rotated output i, its table binding and
// rphys<i>: the weight row that logical row l reads.
func (s *mvSpec) ropeFuncs(w *strings.Builder, i int) {
	r := s.Rope[i]
	fmt.Fprintf(w, "@group(0) @binding(%d) var<storage, read> CS%d: array<vec2<f32>>;\n", r.Bind, i)
	if r.Trad {
		fmt.Fprintf(w, "fn rphys%d(l: u32) -> u32 {\n\treturn l;\n}\n", i)
		return
	}
	fmt.Fprintf(w, `fn rphys%d(l: u32) -> u32 {
	let t = l %% %du;
	if (t >= %du) {
		return l;
	}
	return l - t + (t >> 1u) + (t & 1u) * %du;
}
`, i, r.HD, r.Dims, r.Dims/2)
}

func (s *mvSpec) rowsPerWG() int {
	if s.Col > 0 {
		return s.Col
	}
	return 256 / s.Lanes * s.Rows
}

// shared reports whether x (one row) is staged in workgroup memory.
func (s *mvSpec) shared() bool { return s.CB > 0 }

// rmsFits reports whether the kernel can fold an RMS prologue: the column
// kernel can at any width (it normalises x in registers); the row kernel
// needs the row staged whole in workgroup memory, one block per invocation
// (rmsStage).
func (s *mvSpec) rmsFits() bool {
	return s.Col > 0 || s.shared() && s.CB == s.K/32 && s.CB <= 256
}

// nch is the number of chunks x is staged in (shared).
func (s *mvSpec) nch() int { return (s.K/32 + s.CB - 1) / s.CB }

// iters is the block iterations of each invocation per chunk (shared).
func (s *mvSpec) iters() int { return (s.CB + s.Lanes - 1) / s.Lanes }

// rowLoads is the most vec4 words of weights the row kernel holds loaded
// ahead of their arithmetic when it batches iterations (B > 1): a batch
// of wider kinds (dense, 8-bit) is made smaller rather than hold hundreds
// of registers.
const rowLoads = 32

// batch is the block iterations whose weight loads the row kernel issues
// together (shared): B, halved while the batch would hold more than
// rowLoads vec4 words (one iteration is never split).
func (s *mvSpec) batch() int {
	b := max(s.B, 1)
	per := s.W[0].rawVec4() * s.mats() * s.Rows
	for b > 1 && b*per > rowLoads {
		b /= 2
	}
	return b
}

// mats is the weights one workgroup's invocation reads (2 for Dual).
func (s *mvSpec) mats() int {
	if s.Dual {
		return 2
	}
	return 1
}

// slots is the partial sums an invocation carries.
func (s *mvSpec) slots() int {
	n := s.Rows * s.MB
	if s.Dual {
		n *= 2
	}
	return n
}

// redFloats is the workgroup reduction buffer's length.
func (s *mvSpec) redFloats() int { return 256 * s.slots() }

// rmsFloats is the workgroup memory of the RMS prologue's sums of squares
// (ssp, one per invocation, and ssr, 16 partial totals).
func (s *mvSpec) rmsFloats() int {
	if s.RMS {
		return 256 + 16
	}
	return 0
}

// chunkBlocks is the number of 32-element blocks of x to stage at a time
// in limit bytes of workgroup memory: all of them when they fit, else the
// largest multiple of Lanes that divides the block count (no bounds checks
// in the loop), else the largest multiple of Lanes; 0 if not even Lanes
// blocks fit.
func (s *mvSpec) chunkBlocks(limit int) int {
	kb := s.K / 32
	most := (limit - (s.redFloats()+s.rmsFloats())*4) / (32*4 + 4)
	if kb <= most {
		return kb
	}
	best := 0
	for cb := s.Lanes; cb <= most; cb += s.Lanes {
		if kb%cb == 0 {
			best = cb
		}
	}
	if best == 0 {
		best = most / s.Lanes * s.Lanes
	}
	return best
}

func (s *mvSpec) source() string {
	if s.Col > 0 {
		return s.colSource()
	}
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	s.bindings(&w, s.shared())
	kb := s.K / 32
	p("const K4: u32 = %du;\nconst KB: u32 = %du;\n", s.K/4, kb)
	p("var<workgroup> red: array<f32, %d>;\n", s.redFloats())
	slots := s.slots()
	if s.shared() {
		p("const CB: u32 = %du;\n", s.CB)
		p("var<workgroup> xsh: array<vec4<f32>, %d>;\nvar<workgroup> xbs: array<f32, %d>;\n", s.CB*8, s.CB)
		if s.RMS {
			p("var<workgroup> ssp: array<f32, 256>;\nvar<workgroup> ssr: array<f32, 16>;\n")
		}
	} else {
		p("fn xload(b: u32, m0: u32, i: u32) -> vec4<f32> { return X[min(m0 + b, P.m - 1u) * K4 + i]; }\n")
		for i := range s.Out {
			s.accFunc(&w, i, slots)
		}
	}
	for i := range s.Out {
		s.storeFunc(&w, i)
	}
	s.mainHead(&w, 256)
	p("\tlet m0 = wid.z * %du;\n", s.MB)
	s.pickOutput(&w)
	L := s.Lanes
	p("\tvar a: array<f32, %d>;\n", slots)
	if !s.shared() {
		s.branches(&w, "\t", func(i int, in string) { p("%sa = acc%d(lwg, li, m0, a);\n", in, i) })
	} else {
		p("\tlet lane = li %% %du;\n\tlet row0 = lwg * %du + (li / %du) * %du;\n", L, s.rowsPerWG(), L, s.Rows)
		nch := s.nch()
		if nch > 1 {
			p("\tfor (var c = 0u; c < %du; c++) {\n", nch)
		} else {
			p("\t{\n\t\tlet c = 0u;\n")
		}
		in := "\t\t"
		ragged := s.iters()*L != s.CB || kb%s.CB != 0
		switch {
		case s.RMS:
			s.rmsStage(&w)
		case nch > 1:
			p("%sworkgroupBarrier();\n", in)
			s.stage(&w, in, kb%s.CB != 0)
			p("%sworkgroupBarrier();\n", in)
		default:
			s.stage(&w, in, false)
			p("%sworkgroupBarrier();\n", in)
		}
		s.branches(&w, in, func(i int, in string) {
			for r := 0; r < s.Rows; r++ {
				if s.ropeOf(i) != nil {
					p("%slet rw%d = rphys%d(min(row0 + %du, P.n%d - 1u));\n", in, r, i, r, i)
				} else {
					p("%slet rw%d = min(row0 + %du, P.n%d - 1u);\n", in, r, r, i)
				}
			}
			iters := s.iters()
			// iterations in batches of B, then the remainder as one
			// shorter batch: no bounds checks unless ragged
			B := min(s.batch(), iters)
			full := iters / B * B
			if full == B {
				p("%s{\n%s\tlet it = 0u;\n", in, in)
			} else {
				p("%sfor (var it = 0u; it < %du; it += %du) {\n", in, full, B)
			}
			s.rowBatch(&w, in+"\t", i, B, ragged)
			p("%s}\n", in)
			if rem := iters - full; rem > 0 {
				p("%s{\n%s\tlet it = %du;\n", in, in, full)
				s.rowBatch(&w, in+"\t", i, rem, ragged)
				p("%s}\n", in)
			}
		})
		p("\t}\n")
	}
	// One barrier, then one invocation per output adds its Lanes partial
	// sums, starting at a different lane per invocation (no bank
	// conflicts), in four independent chains.
	S := s.Rows * s.MB
	N := 256 / L * S // invocations that each add one output's partial sums
	if s.RMS {
		rmsPartials(&w, 16, 16)
	}
	p(`	for (var k = 0u; k < %du; k++) {
		red[k * 256u + li] = a[k];
	}
	workgroupBarrier();
`, slots)
	// with a rotated output every invocation stays for the swap of sums
	// (barriers need them all): those past N redo invocation N-1's sums
	id := "li"
	if s.roped() {
		p("\tlet lr = min(li, %du);\n", N-1)
		id = "lr"
	} else {
		p("\tif (li >= %du) {\n\t\treturn;\n\t}\n", N)
	}
	p(`	let grp = %[1]s / %[2]du;
	let k = %[1]s %% %[2]du;
	let row = lwg * %[3]du + grp * %[4]du + k / %[5]du;
	let mr = m0 + k %% %[5]du;
`, id, S, s.rowsPerWG(), s.Rows, s.MB)
	sum := func(name, slot string) {
		p("\tvar %s: f32;\n\t{\n\t\tlet base = (%s) * 256u + grp * %du;\n", name, slot, L)
		for q := 0; q < 4; q++ {
			p("\t\tvar s%d = red[base + ((%s + %du) & %du)];\n", q, id, q, L-1)
		}
		p("\t\tfor (var j = %s + 4u; j < %s + %du; j += 4u) {\n", id, id, L)
		for q := 0; q < 4; q++ {
			p("\t\t\ts%d += red[base + ((j + %du) & %du)];\n", q, q, L-1)
		}
		p("\t\t}\n\t\t%s = (s0 + s1) + (s2 + s3);\n\t}\n", name)
	}
	sum("v", "k")
	args := "row, mr, v"
	if s.Dual {
		sum("u", fmt.Sprintf("k + %du", S))
		args += ", u"
	}
	if s.RMS {
		s.rmsScale(&w, 16)
	}
	if s.roped() {
		// the pair's other sum (row ^ 1: its neighbour invocation)
		p("\tworkgroupBarrier();\n\tred[li] = v;\n\tworkgroupBarrier();\n\tlet vp = red[lr ^ 1u];\n")
		p("\tif (li >= %du) {\n\t\treturn;\n\t}\n", N)
		args += ", vp"
	}
	s.storeCall(&w, args)
	return w.String()
}

// rowBatch writes nb block iterations (it, it+1, …) of the row kernel
// with x staged, for output i: first the loads of every block's weight
// words (all rows; gate and up for Dual), then their arithmetic with the
// block of x from workgroup memory. Ragged: an iteration past the chunk
// or past KB loads from a clamped block and adds nothing.
func (s *mvSpec) rowBatch(w *strings.Builder, in string, i, nb int, ragged bool) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	for b := 0; b < nb; b++ {
		if b == 0 {
			p("%slet lb0 = it * %du + lane;\n", in, s.Lanes)
		} else {
			p("%slet lb%d = (it + %du) * %du + lane;\n", in, b, b, s.Lanes)
		}
		p("%slet blk%d = c * CB + lb%d;\n", in, b, b)
		at := fmt.Sprintf("blk%d", b)
		if ragged {
			p("%slet ok%d = lb%d < CB && blk%d < KB;\n%slet cb%d = min(blk%d, KB - 1u);\n", in, b, b, b, in, b, b)
			at = fmt.Sprintf("cb%d", b)
		}
		for m := 0; m < s.mats(); m++ {
			for r := 0; r < s.Rows; r++ {
				p("%slet q%d_%d_%d = %s_raw(rw%d, %s);\n%slet z%d_%d_%d = %s_sraw(rw%d, %s);\n", in, b, m, r, s.wName(i, m), r, at, in, b, m, r, s.wName(i, m), r, at)
			}
		}
	}
	for b := 0; b < nb; b++ {
		if ragged {
			p("%sif (ok%d) {\n", in, b)
		} else {
			p("%s{\n", in)
		}
		// x of block lb, unswizzled (see stage)
		p("%s\tlet o = lb%d * 8u;\n%s\tlet sw = lb%d & 7u;\n", in, b, in, b)
		for j := 0; j < 8; j++ {
			p("%s\tlet x%d = xsh[o + (%du ^ sw)];\n", in, j, j)
		}
		p("%s\tlet s = xbs[lb%d];\n", in, b)
		for m := 0; m < s.mats(); m++ {
			for r := 0; r < s.Rows; r++ {
				p("%s\ta[%d] += %s_dotr(q%d_%d_%d, z%d_%d_%d, x0, x1, x2, x3, x4, x5, x6, x7, s);\n", in, m*s.Rows+r, s.wName(i, m), b, m, r, b, m, r)
			}
		}
		p("%s}\n", in)
	}
}

// bindings declares the parameters, x, the weights' accessors (prescaled:
// they read x already scaled for the 4-bit dot product), the norm, and
// each output with its bias and residual.
func (s *mvSpec) bindings(w *strings.Builder, prescaled bool) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p(`struct Params {
	m: u32, n0: u32, n1: u32, n2: u32,
	wg0: u32, wg1: u32, wgt: u32, eps: f32,
	shift: f32, off0: u32, off1: u32, off2: u32,
	stride0: u32, stride1: u32, stride2: u32, col0: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(%d) var<storage, read> X: array<vec4<f32>>;
`, s.XBind)
	for i := range s.W {
		s.W[i].Prescaled = prescaled
		w.WriteString(s.W[i].String())
	}
	if s.Norm != nil {
		w.WriteString(s.Norm.String())
	}
	for i := range s.Out {
		if s.Bias[i] != nil {
			w.WriteString(s.Bias[i].String())
		}
		p("@group(0) @binding(%d) var<storage, read_write> O%d: array<f32>;\n", s.Out[i], i)
		if s.ropeOf(i) != nil {
			s.ropeFuncs(w, i)
		}
		if s.Res[i] >= 0 {
			p("@group(0) @binding(%d) var<storage, read> RES%d: array<f32>;\n", s.Res[i], i)
		}
	}
}

// storeCall ends a kernel: the invocation stores its result through the
// store function of the output it computes (which), with args.
func (s *mvSpec) storeCall(w *strings.Builder, args string) {
	s.branches(w, "\t", func(i int, in string) { fmt.Fprintf(w, "%sstore%d(%s);\n", in, i, args) })
	w.WriteString("}\n")
}

// mainHead opens the entry point of a kernel of size invocations: the
// workgroup's index wg, past the last one returned.
func (s *mvSpec) mainHead(w *strings.Builder, size int) {
	fmt.Fprintf(w, `@compute @workgroup_size(%d)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let wg = wid.x + wid.y * nwg.x;
	if (wg >= P.wgt) {
		return;
	}
`, size)
}

// pickOutput writes which output the workgroup serves (which) and its
// workgroup index within that output's (lwg). Which is uniform across the
// workgroup; the barriers stay outside the branches on it.
func (s *mvSpec) pickOutput(w *strings.Builder) {
	w.WriteString("\tvar which = 0u;\n\tvar lwg = wg;\n")
	switch len(s.Out) {
	case 2:
		w.WriteString("\tif (wg >= P.wg0) {\n\t\twhich = 1u;\n\t\tlwg = wg - P.wg0;\n\t}\n")
	case 3:
		w.WriteString("\tif (wg >= P.wg1) {\n\t\twhich = 2u;\n\t\tlwg = wg - P.wg1;\n\t} else if (wg >= P.wg0) {\n\t\twhich = 1u;\n\t\tlwg = wg - P.wg0;\n\t}\n")
	}
}

// branches writes an if/else chain on which, one branch per output,
// indented by in; body writes output i's branch, indented by its in.
func (s *mvSpec) branches(w *strings.Builder, in string, body func(i int, in string)) {
	for i := range s.Out {
		if i == 0 {
			fmt.Fprintf(w, "%sif (which == 0u) {\n", in)
		} else {
			fmt.Fprintf(w, "%s} else if (which == %du) {\n", in, i)
		}
		body(i, in+"\t")
	}
	fmt.Fprintf(w, "%s}\n", in)
}

// wName is the accessor of weight m (Dual: 0 gate, 1 up) for output i.
func (s *mvSpec) wName(i, m int) string {
	if s.Dual {
		return s.W[m].Name
	}
	return s.W[i].Name
}

// xScale is the WGSL factor staged x vec4 j of a block is multiplied by,
// or "" for none.
func (s *mvSpec) xScale(j int) string {
	k := s.W[0].Kind
	for e := 4 * j; e < 4*j+4; e++ {
		if k.xScale(e) != 1 {
			return " * " + k.xScaleVec(j)
		}
	}
	return ""
}

// stage writes the WGSL that copies chunk c of x (blocks [c·CB, c·CB+CB))
// into workgroup memory: each invocation one block, swizzled, scaled, and
// its Σx in xbs.
func (s *mvSpec) stage(w *strings.Builder, in string, check bool) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("%sfor (var lb = li; lb < CB; lb += 256u) {\n", in)
	p("%s\tlet blk = c * CB + lb;\n", in)
	if check {
		p("%s\tif (blk >= KB) {\n%s\t\tbreak;\n%s\t}\n", in, in, in)
	}
	p("%s\tlet base = m0 * K4 + blk * 8u;\n%s\tlet o = lb * 8u;\n%s\tlet sw = lb & 7u;\n", in, in, in)
	for j := 0; j < 8; j++ {
		p("%s\tlet v%d = X[base + %du];\n%s\txsh[o + (%du ^ sw)] = v%d%s;\n", in, j, j, in, j, j, s.xScale(j))
	}
	p("%s\tlet t = v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7;\n%s\txbs[lb] = t.x + t.y + t.z + t.w;\n%s}\n", in, in, in)
}

// rmsStage writes the WGSL that stages all of x (KB ≤ 256 blocks, one per
// invocation) times the norm weight, and each invocation's Σx² in ssp.
// The norm's 1/rms is a factor of every output (W·(x·inv∘n) =
// inv·W·(x∘n)), so it is applied at the end (rmsScale): the reduction of
// Σx² is off the path between loading x and the weight loads that need it
// staged, which before cost two barriers at the head of every workgroup.
func (s *mvSpec) rmsStage(w *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\tvar ss = 0.0;\n\tif (li < KB) {\n\t\tlet o = li * 8u;\n\t\tlet sw = li & 7u;\n")
	for j := 0; j < 8; j++ {
		p("\t\tlet v%d = X[m0 * K4 + li * 8u + %du];\n\t\tss += dot(v%d, v%d);\n", j, j, j, j)
		if s.Norm != nil {
			p("\t\tlet c%d = 4u * (o + %du);\n", j, j)
			p("\t\tlet u%d = v%d * (vec4<f32>(nw_get(0u, c%d), nw_get(0u, c%d + 1u), nw_get(0u, c%d + 2u), nw_get(0u, c%d + 3u)) + vec4<f32>(P.shift));\n", j, j, j, j, j, j)
		} else {
			p("\t\tlet u%d = v%d;\n", j, j)
		}
		p("\t\txsh[o + (%du ^ sw)] = u%d%s;\n", j, j, s.xScale(j))
	}
	p("\t\tlet t = u0 + u1 + u2 + u3 + u4 + u5 + u6 + u7;\n\t\txbs[li] = t.x + t.y + t.z + t.w;\n\t}\n\tssp[li] = ss;\n\tworkgroupBarrier();\n")
}

// rmsPartials writes the WGSL by which invocations li < n each add per
// of the invocations' Σx² in ssp into ssr[li]; a barrier must come
// between it and rmsScale.
func rmsPartials(w *strings.Builder, n, per int) {
	fmt.Fprintf(w, `	if (li < %[1]du) {
		var t = 0.0;
		for (var j = 0u; j < %[2]du; j++) {
			t += ssp[li * %[2]du + j];
		}
		ssr[li] = t;
	}
`, n, per)
}

// rmsScale writes the WGSL that multiplies an output's sum v (and u, the
// up projection's, for Dual) by the norm's 1/rms, from the n partial
// totals in ssr.
func (s *mvSpec) rmsScale(w *strings.Builder, n int) {
	fmt.Fprintf(w, "\tvar tot = 0.0;\n\tfor (var j = 0u; j < %du; j++) {\n\t\ttot += ssr[j];\n\t}\n\tlet inv = 1.0 / sqrt(tot / %d.0 + P.eps);\n\tv = v * inv;\n", n, s.K)
	if s.Dual {
		w.WriteString("\tu = u * inv;\n")
	}
}

// accFunc writes acc<i> for x read from memory (several rows of x): this
// invocation's partial sums for the rows of output i it carries ([a...,
// u...] for Dual), added to a0.
func (s *mvSpec) accFunc(w *strings.Builder, i, slots int) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	R, MB, L := s.Rows, s.MB, s.Lanes
	p("fn acc%d(lwg: u32, li: u32, m0: u32, a0: array<f32, %d>) -> array<f32, %d> {\n", i, slots, slots)
	p("\tvar a = a0;\n\tlet lane = li %% %du;\n\tlet row0 = lwg * %du + (li / %du) * %du;\n\tlet n = P.n%d;\n", L, s.rowsPerWG(), L, R, i)
	kb := s.K / 32
	it := (kb + L - 1) / L
	p("\tfor (var it = 0u; it < %du; it++) {\n\t\tlet blk = it * %du + lane;\n", it, L)
	if it*L != kb {
		p("\t\tif (blk >= KB) {\n\t\t\tbreak;\n\t\t}\n")
	}
	p("\t\tfor (var b = 0u; b < %du; b++) {\n", MB)
	for j := 0; j < 8; j++ {
		p("\t\t\tlet x%d = xload(b, m0, blk * 8u + %du);\n", j, j)
	}
	p("\t\t\tlet t = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;\n\t\t\tlet s = t.x + t.y + t.z + t.w;\n")
	p("\t\t\tfor (var r = 0u; r < %du; r++) {\n\t\t\t\tlet row = min(row0 + r, n - 1u);\n", R)
	for m := 0; m < s.mats(); m++ {
		p("\t\t\t\ta[%du + r * %du + b] += %s_dot(row, blk, x0, x1, x2, x3, x4, x5, x6, x7, s);\n", m*R*MB, MB, s.wName(i, m))
	}
	p("\t\t\t}\n\t\t}\n\t}\n\treturn a;\n}\n")
}

// storeFunc writes store<i>: the reduced sum of one output row and x row,
// with the epilogue applied.
func (s *mvSpec) storeFunc(w *strings.Builder, i int) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	switch {
	case s.Dual:
		p("fn store%d(row: u32, mr: u32, g: f32, u: f32) {\n", i)
	case s.roped():
		p("fn store%d(row: u32, mr: u32, g: f32, gp: f32) {\n", i)
	default:
		p("fn store%d(row: u32, mr: u32, g: f32) {\n", i)
	}
	if r := s.ropeOf(i); r != nil {
		s.ropeStore(w, i, r)
		return
	}
	p("\tif (row >= P.n%d || mr >= P.m) {\n\t\treturn;\n\t}\n", i)
	if s.Dual {
		p("\tvar v = g / (1.0 + exp(-g)) * u;\n")
	} else {
		p("\tvar v = g;\n")
	}
	if s.Bias[i] != nil {
		p("\tv = v + %s_get(0u, row);\n", s.Bias[i].Name)
	}
	if s.Res[i] >= 0 {
		p("\tv = RES%d[mr * P.stride%d + P.col0 + row] + v;\n", i, i)
	}
	p("\tO%d[P.off%d + mr * P.stride%d + P.col0 + row] = v;\n}\n", i, i, i)
}

// ropeOf is output i's rotation, or nil.
func (s *mvSpec) ropeOf(i int) *mvRope {
	if s.Rope == nil {
		return nil
	}
	return s.Rope[i]
}

// ropeStore writes the body of store<i> for a rotated output: the sums of
// the row (g) and of its pair (gp), each with its bias, rotated by the
// table's (cos, sin) of the pair and stored at the row's place.
func (s *mvSpec) ropeStore(w *strings.Builder, i int, r *mvRope) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\tif (row >= P.n%d || mr >= P.m) {\n\t\treturn;\n\t}\n\tlet pr = rphys%d(row);\n\tvar v = g;\n\tvar vp = gp;\n", i, i)
	if b := s.Bias[i]; b != nil {
		p("\tv = v + %s_get(0u, pr);\n\tvp = vp + %s_get(0u, rphys%d(row ^ 1u));\n", b.Name, b.Name, i)
	}
	p(`	let t = row %% %du;
	if (t < %du) {
		let cs = CS%d[t >> 1u];
		if ((row & 1u) == 0u) {
			v = v * cs.x - vp * cs.y;
		} else {
			v = v * cs.x + vp * cs.y;
		}
	}
	O%d[P.off%d + mr * P.stride%d + P.col0 + pr] = v;
}
`, r.HD, r.Dims, i, i, i, i)
}

// colFit sets the column kernel's shape (T invocations, NB blocks each)
// for rows rows per workgroup and at most threads invocations, and
// reports whether its workgroup memory fits in limit bytes.
//
// The column kernel (one row of x) gives invocation li of a workgroup the
// 32-column blocks li, li+T, … (NB of them) of every row: it loads its
// block of x once into registers (times the norm weight, scaled for the
// quantized dot product, with Σx) and then the same block of Col
// consecutive rows, their loads issued ahead of the arithmetic in batches
// of up to colLoads vec4 words. Consecutive invocations read consecutive
// words of a row (coalesced), and no x is read from
// workgroup memory in the inner loop (the row kernel reads 128 bytes of
// staged x there per 16-byte word of 4-bit weights, shared by its Rows
// rows). The T partial sums of each row are then added in workgroup
// memory in two steps, a barrier before each (colParts).
func (s *mvSpec) colFit(rows, threads, limit int) bool {
	kb := s.K / 32
	s.Col = rows
	s.NB = (kb + threads - 1) / threads
	s.T = ((kb+s.NB-1)/s.NB + 31) / 32 * 32
	if rows*s.mats() > s.T {
		return false
	}
	ssp := 0
	if s.RMS {
		ssp = s.T
	}
	return (s.colRedFloats()+s.T+32+ssp)*4 <= limit
}

// colLoads is the most vec4 words of weights the column kernel loads
// ahead of their arithmetic per invocation.
const colLoads = 16

// colParts is how many invocations add the T partial sums of one slot
// (an output row; gate and up for Dual) in the first reduction step, T/PT
// each, before one invocation adds their PT results: a divisor of T with
// S·PT ≤ T that keeps the two serial chains short.
func (s *mvSpec) colParts() int {
	S := s.Col * s.mats()
	best := 1
	for pt := 1; pt*S <= s.T; pt++ {
		if s.T%pt == 0 && max(pt, s.T/pt) < max(best, s.T/best) {
			best = pt
		}
	}
	return best
}

// colRedFloats is the column kernel's first reduction buffer: S slots of
// T partial sums, each slot padded by PT floats so that the strided reads
// of the first reduction step hit distinct banks.
func (s *mvSpec) colRedFloats() int {
	return s.Col * s.mats() * (s.T + s.colParts())
}

// colSource is the WGSL of the column kernel (see colFit).
func (s *mvSpec) colSource() string {
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	s.bindings(&w, true)
	kb := s.K / 32
	R, T, NB := s.Col, s.T, s.NB
	S := R * s.mats()
	PT := s.colParts()
	ST := T + PT
	p("const KB: u32 = %du;\n", kb)
	p("var<workgroup> red: array<f32, %d>;\nvar<workgroup> red2: array<f32, %d>;\n", s.colRedFloats(), T)
	if s.RMS {
		p("var<workgroup> ssp: array<f32, %d>;\nvar<workgroup> ssr: array<f32, 32>;\n", T)
	}
	for i := range s.Out {
		s.storeFunc(&w, i)
	}
	s.mainHead(&w, T)
	s.pickOutput(&w)
	p("\tlet row0 = lwg * %du;\n\tvar a: array<f32, %d>;\n", R, S)
	ragged := NB*T != kb
	xraw := func(in, blk string) {
		for j := 0; j < 8; j++ {
			p("%slet xr%d = X[%s * 8u + %du];\n", in, j, blk, j)
		}
	}
	if s.RMS {
		// Σx² over the whole row, added across the workgroup
		if NB == 1 {
			p("\tlet cb = min(li, KB - 1u);\n")
			xraw("\t", "cb")
			p("\tvar ss = 0.0;\n")
			for j := 0; j < 8; j++ {
				p("\tss += dot(xr%d, xr%d);\n", j, j)
			}
			if ragged {
				p("\tss = select(0.0, ss, li < KB);\n")
			}
		} else {
			p("\tvar ss = 0.0;\n\tfor (var nb = 0u; nb < %du; nb++) {\n\t\tlet blk = nb * %du + li;\n\t\tif (blk < KB) {\n", NB, T)
			xraw("\t\t\t", "blk")
			for j := 0; j < 8; j++ {
				p("\t\t\tss += dot(xr%d, xr%d);\n", j, j)
			}
			p("\t\t}\n\t}\n")
		}
		// added up at the end, and 1/rms applied to the sums (rmsStage)
		p("\tssp[li] = ss;\n")
	}
	in := "\t\t"
	if NB == 1 {
		p("\t{\n\t\tlet blk = li;\n")
	} else {
		p("\tfor (var nb = 0u; nb < %du; nb++) {\n\t\tlet blk = nb * %du + li;\n", NB, T)
	}
	if ragged {
		p("%sif (blk < KB) {\n", in)
		in += "\t"
	}
	if !(s.RMS && NB == 1) {
		xraw(in, "blk")
	}
	for j := 0; j < 8; j++ {
		switch {
		case s.RMS && s.Norm != nil:
			p("%slet c%d = blk * 32u + %du;\n", in, j, 4*j)
			p("%slet u%d = xr%d * (vec4<f32>(nw_get(0u, c%d), nw_get(0u, c%d + 1u), nw_get(0u, c%d + 2u), nw_get(0u, c%d + 3u)) + vec4<f32>(P.shift));\n", in, j, j, j, j, j, j)
		default:
			p("%slet u%d = xr%d;\n", in, j, j)
		}
	}
	p("%slet t = u0 + u1 + u2 + u3 + u4 + u5 + u6 + u7;\n%slet xs = t.x + t.y + t.z + t.w;\n", in, in)
	for j := 0; j < 8; j++ {
		p("%slet x%d = u%d%s;\n", in, j, j, s.xScale(j))
	}
	s.branches(&w, in, func(i int, _ string) {
		for r := 0; r < R; r++ {
			p("%s\tlet rw%d = min(row0 + %du, P.n%d - 1u);\n", in, r, r, i)
		}
		// the loads of a batch of rows before their arithmetic, so that
		// many are in flight: up to colLoads vec4 words per invocation
		// (all R rows of 4-bit weights; fewer rows of wider kinds, which
		// would otherwise take hundreds of registers)
		batch := max(1, colLoads/(s.W[0].rawVec4()*s.mats()))
		for r0 := 0; r0 < R; r0 += batch {
			for m := 0; m < s.mats(); m++ {
				for r := r0; r < min(R, r0+batch); r++ {
					p("%s\tlet q%d_%d = %s_raw(rw%d, blk);\n%s\tlet z%d_%d = %s_sraw(rw%d, blk);\n", in, m, r, s.wName(i, m), r, in, m, r, s.wName(i, m), r)
				}
			}
			for m := 0; m < s.mats(); m++ {
				for r := r0; r < min(R, r0+batch); r++ {
					p("%s\ta[%d] += %s_dotr(q%d_%d, z%d_%d, x0, x1, x2, x3, x4, x5, x6, x7, xs);\n", in, m*R+r, s.wName(i, m), m, r, m, r)
				}
			}
		}
	})
	if ragged {
		p("\t\t}\n")
	}
	p("\t}\n")
	// Reduction: slot k's T partial sums are added by PT invocations
	// (T/PT values each, PT apart: consecutive invocations hit
	// consecutive banks), then the PT results by one invocation.
	for k := 0; k < S; k++ {
		p("\tred[%du + li] = a[%d];\n", k*ST, k)
	}
	p("\tworkgroupBarrier();\n")
	if s.RMS {
		rmsPartials(&w, 32, T/32)
	}
	p("\tif (li < %du) {\n\t\tlet k = li / %du;\n\t\tlet part = li %% %du;\n\t\tlet base = k * %du + part;\n", S*PT, PT, PT, ST)
	if n := T / PT; n%2 == 0 {
		p("\t\tvar s0 = 0.0;\n\t\tvar s1 = 0.0;\n\t\tfor (var j = 0u; j < %du; j += 2u) {\n", n)
		p("\t\t\ts0 += red[base + j * %du];\n\t\t\ts1 += red[base + (j + 1u) * %du];\n", PT, PT)
		p("\t\t}\n\t\tred2[li] = s0 + s1;\n")
	} else {
		p("\t\tvar s0 = 0.0;\n\t\tfor (var j = 0u; j < %du; j++) {\n\t\t\ts0 += red[base + j * %du];\n\t\t}\n\t\tred2[li] = s0;\n", n, PT)
	}
	p("\t}\n\tworkgroupBarrier();\n\tif (li >= %du) {\n\t\treturn;\n\t}\n\tlet row = row0 + li;\n", R)
	sum := func(name, slot string) {
		p("\tvar %s = 0.0;\n\tfor (var j = 0u; j < %du; j++) {\n\t\t%s += red2[(%s) * %du + ((j + li) %% %du)];\n\t}\n", name, PT, name, slot, PT, PT)
	}
	sum("v", "li")
	args := "row, 0u, v"
	if s.Dual {
		sum("u", fmt.Sprintf("li + %du", R))
		args += ", u"
	}
	if s.RMS {
		s.rmsScale(&w, 32)
	}
	s.storeCall(&w, args)
	return w.String()
}
