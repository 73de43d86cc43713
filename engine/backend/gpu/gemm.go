package gpu

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"hearth/engine/tensor"
)

// GemmShape picks the kernel of the MatMuls the matrix-vector kernel does
// not take (more than 16 rows of x: prefill).
//
// The tiled kernel gives each workgroup a tile of M rows of x (tokens) ×
// N output rows (weight rows) and each invocation TM × TN of its outputs,
// held in registers. The tile walks k in slices of 32: each slice of x
// and of the weight is staged once in workgroup memory, the weight
// dequantized there once per slice (8 elements of one row, one scale and
// bias, per staging item), and every invocation reads its TM rows of x
// and TN rows of the weight as vec4s of four k each, TM + TN loads for
// 4·TM·TN fused multiply-adds. Prefetch loads the next slice's words into
// registers before computing the current one. Fit halves the tile (its
// longer side first, as far as the shape stays valid) for a matrix whose
// grid would have fewer than fitWorkgroups workgroups, so a small matrix
// still spreads over a large GPU.
//
// Simple picks the untiled kernel instead (64 × 64 tiles, 4 × 4 outputs
// per invocation, every element dequantized on its own): the only kernel
// before 2026-12-02, kept for widths that are not a multiple of 32 and for
// comparison. Zero fields pick the defaults (64 × 128 tiles, 8 × 8 per
// invocation, neither Prefetch nor Fit: the fastest shape measured on the
// 8B Llama shape on the H200, docs/benchmarks.md).
type GemmShape struct {
	M, N     int // tile: rows of x × output rows
	TM, TN   int // outputs per invocation: 4 or 8 each
	Prefetch bool
	Fit      bool
	Simple   bool
}

// fitWorkgroups is the grid a Fit shape shrinks its tile to reach: two
// workgroups for each of the 132 multiprocessors of an H100 or H200 (the
// count is not visible through WebGPU).
const fitWorkgroups = 264

// fit is the shape a Fit shape takes for an m × rows output.
func (s GemmShape) fit(m, rows int) GemmShape {
	if !s.Fit {
		return s
	}
	grid := func(t GemmShape) int { return ((rows + t.N - 1) / t.N) * ((m + t.M - 1) / t.M) }
	for grid(s) < fitWorkgroups {
		n, mm := s, s
		n.N /= 2
		mm.M /= 2
		first, second := n, mm // the longer side first
		if s.M > s.N {
			first, second = mm, n
		}
		switch {
		case first.check() == nil:
			s = first
		case second.check() == nil:
			s = second
		default:
			return s
		}
	}
	return s
}

// defaultGemm is the tiled kernel's default shape.
var defaultGemm = GemmShape{M: 64, N: 128, TM: 8, TN: 8}

func (s GemmShape) withDefaults() GemmShape {
	switch {
	case s.Simple:
		return GemmShape{Simple: true}
	case s == GemmShape{}:
		return defaultGemm
	}
	s.M, s.N = cmp.Or(s.M, defaultGemm.M), cmp.Or(s.N, defaultGemm.N)
	s.TM, s.TN = cmp.Or(s.TM, defaultGemm.TM), cmp.Or(s.TN, defaultGemm.TN)
	return s
}

// threads is the workgroup size of the tiled kernel.
func (s GemmShape) threads() int { return (s.M / s.TM) * (s.N / s.TN) }

// sharedBytes is the workgroup memory the tiled kernel declares: a
// 32-wide slice of M rows of x and of N rows of the weight.
func (s GemmShape) sharedBytes() int { return (s.M + s.N) * 32 * 4 }

// check reports a shape the tiled kernel cannot run. Each invocation's rows
// are 8·j apart plus its own offset (so its workgroup-memory swizzle is
// one value); staging gives each invocation whole vec4s of x and whole
// 8-element items of the weight.
func (s GemmShape) check() error {
	if s.Simple {
		return nil
	}
	ok := (s.TM == 4 || s.TM == 8) && (s.TN == 4 || s.TN == 8) && s.M > 0 && s.N > 0 && s.M%s.TM == 0 && s.N%s.TN == 0 &&
		(s.M/s.TM)%8 == 0 && (s.N/s.TN)%8 == 0
	if t := s.threads(); !ok || !(t == 64 || t == 128 || t == 256) || (s.M*8)%t != 0 || (s.N*4)%t != 0 {
		return fmt.Errorf("gpu: gemm shape %v (4 or 8 outputs per invocation each way; M/TM and N/TN multiples of 8; 64, 128 or 256 invocations; M·8 and N·4 multiples of them)", s)
	}
	return nil
}

// String is the shape as ParseGemmShape reads it.
func (s GemmShape) String() string {
	if s.Simple {
		return "simple"
	}
	p := ""
	if s.Prefetch {
		p = "p"
	}
	if s.Fit {
		p += "f"
	}
	return fmt.Sprintf("%dx%dx%dx%d%s", s.M, s.N, s.TM, s.TN, p)
}

// ParseGemmShape reads a gemm shape: "simple", or MxNxTMxTN with an
// optional "p" (Prefetch) and then "f" (Fit), e.g. "64x128x8x8pf".
func ParseGemmShape(f string) (GemmShape, error) {
	if f == "simple" {
		return GemmShape{Simple: true}, nil
	}
	var s GemmShape
	body, fit := strings.CutSuffix(f, "f")
	body, pre := strings.CutSuffix(body, "p")
	parts := strings.Split(body, "x")
	if len(parts) != 4 {
		return s, fmt.Errorf("gpu: gemm shape %q: want simple or MxNxTMxTN[p]", f)
	}
	var v [4]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return s, fmt.Errorf("gpu: gemm shape %q: want simple or MxNxTMxTN[p]", f)
		}
		v[i] = n
	}
	s = GemmShape{M: v[0], N: v[1], TM: v[2], TN: v[3], Prefetch: pre, Fit: fit}
	return s, s.check()
}

// SetGemm changes the kernel of many-row MatMuls (for tuning and
// comparison; zero fields pick the defaults); cached plans are dropped.
func (b *Backend) SetGemm(s GemmShape) error {
	s = s.withDefaults()
	if err := s.check(); err != nil {
		return err
	}
	b.gemm = s
	b.dropPlans()
	return nil
}

// gemm runs MatMul nodes the matrix-vector kernel does not take: many
// rows, widths that are not a multiple of 32, split weights, node weights.
// Widths that are a multiple of 32 take the tiled kernel (GemmShape), the
// rest the simple one.
func (c *compiler) gemm(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	ws := g.Shape(nd.In[1])
	n, k := ws[0], ws[1]
	m := tensor.Elements(nd.Shape) / n
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	blocks := []block{{rows: n}}
	if w := c.bufOf(nd.In[1]); w != nil && !w.alloc {
		blocks = w.blocks
	}
	sh := c.b.gemm
	tiled := !sh.Simple && k%32 == 0 && sh.sharedBytes() <= int(c.b.limits.MaxComputeWorkgroupStorageSize)
	out, off := c.out(i)
	for bi, bl := range blocks {
		a, wo, err := c.weight(nd.In[1], bi, "w", 3, k, false)
		if err != nil {
			return err
		}
		row0, rows := bl.row0, bl.rows
		label, src := "gemm "+a.Kind.String(), source("gemm", map[string]any{"Acc": a.String()})
		grid := [3]uint32{uint32((rows + 63) / 64), uint32((m + 63) / 64), 1}
		if tiled {
			sh := sh.fit(m, rows)
			label, src = fmt.Sprintf("gemm %s %v %dx%d", a.Kind, sh, rows, k), tiledGemm(sh, a)
			grid = [3]uint32{uint32((rows + sh.N - 1) / sh.N), uint32((m + sh.M - 1) / sh.M), 1}
		}
		c.add(kspec{label: label, src: src,
			ops: append([]operand{x, out}, wo...),
			params: func(g *tensor.Graph, p *[16]uint32) {
				p[0], p[1], p[2], p[3], p[4], p[5] = uint32(m), uint32(rows), uint32(k), off(g), uint32(n), uint32(row0)
			},
			grid: grid,
		})
	}
	return nil
}

// tiledGemm is the tiled kernel's WGSL for shape s and weight accessor a
// (a.Cols = k, a multiple of 32): O[off + r·stride + col0 + c] =
// Σ_k X[r, k]·w[c, k] for the m × rows outputs of the block.
//
// Workgroup memory holds each staged row of x and of the weight as 8
// vec4s of k, vec4 j of row r at r·8 + (j ^ (r & 7)): the rows an
// invocation reads together (its neighbours' rows, one apart) and the
// rows stored together then fall in different banks without padding.
func tiledGemm(s GemmShape, a accessor) string {
	var w strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	t := s.threads()
	mx, ny := s.N/s.TN, s.M/s.TM // invocations along the output rows, along x's rows
	k := a.Cols
	xu, wu := s.M*8/t, s.N*4/t // staged vec4s of x, weight items, per invocation
	p(`struct Params {
	m: u32, n: u32, k: u32, off: u32,
	stride: u32, col0: u32, pad0: u32, pad1: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
`)
	w.WriteString(a.String())
	raw, load, deq := gemmItem(a)
	w.WriteString(deq)
	p("var<workgroup> As: array<vec4<f32>, %d>;\nvar<workgroup> Bs: array<vec4<f32>, %d>;\n\n", s.M*8, s.N*8)
	p("@compute @workgroup_size(%d)\nfn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {\n", t)
	p("\tlet n0 = wid.x * %du;\n\tlet m0 = wid.y * %du;\n\tlet tx = li %% %du;\n\tlet ty = li / %du;\n", s.N, s.M, mx, mx)
	p("\tlet sa = ty & 7u;\n\tlet sb = tx & 7u;\n")
	// staging: x vec4 j of row r by invocation r·8 + j (8 neighbours read a
	// row's 128 bytes); weight item (row, sub) by row·4 + sub
	for r := 0; r < xu; r++ {
		p("\tlet xr%[1]d = li / 8u + %[2]du;\n\tlet xg%[1]d = min(m0 + xr%[1]d, P.m - 1u) * %[3]du + (li & 7u);\n\tlet xs%[1]d = xr%[1]d * 8u + ((li & 7u) ^ (xr%[1]d & 7u));\n", r, r*t/8, k/4)
	}
	for u := 0; u < wu; u++ {
		p("\tlet wr%[1]d = li / 4u + %[2]du;\n\tlet wg%[1]d = min(n0 + wr%[1]d, P.n - 1u);\n\tlet ws%[1]d = wr%[1]d * 8u + ((2u * (li & 3u)) ^ (wr%[1]d & 7u));\n", u, u*t/4)
	}
	for i := 0; i < s.TM; i++ {
		for j := 0; j < s.TN; j++ {
			p("\tvar c%d_%d = 0.0;\n", i, j)
		}
	}
	loadAll := func(indent, k0 string) {
		for r := 0; r < xu; r++ {
			p("%sxp%d = X[xg%d + %s / 4u];\n", indent, r, r, k0)
		}
		for u := 0; u < wu; u++ {
			p("%swp%d = %s;\n", indent, u, fmt.Sprintf(load, fmt.Sprintf("wg%d", u), fmt.Sprintf("%s + 8u * (li & 3u)", k0)))
		}
	}
	storeAll := func(indent string) {
		for r := 0; r < xu; r++ {
			p("%sAs[xs%d] = xp%d;\n", indent, r, r)
		}
		for u := 0; u < wu; u++ {
			p("%s{ let d = w_deq(wp%d); Bs[ws%d] = d[0]; Bs[ws%d ^ 1u] = d[1]; }\n", indent, u, u, u)
		}
	}
	// registers the staged words pass through (declared out of the loop:
	// naga hoists loop-local variables without re-initialising them)
	for r := 0; r < xu; r++ {
		p("\tvar xp%d: vec4<f32>;\n", r)
	}
	for u := 0; u < wu; u++ {
		p("\tvar wp%d: %s;\n", u, raw)
	}
	if s.Prefetch {
		loadAll("\t", "0u")
	}
	p("\tfor (var k0 = 0u; k0 < %du; k0 += 32u) {\n", k)
	if !s.Prefetch {
		loadAll("\t\t", "k0")
	}
	p("\t\tworkgroupBarrier();\n")
	storeAll("\t\t")
	p("\t\tworkgroupBarrier();\n")
	if s.Prefetch {
		p("\t\tif (k0 + 32u < %du) {\n", k)
		loadAll("\t\t\t", "(k0 + 32u)")
		p("\t\t}\n")
	}
	p("\t\tfor (var kq = 0u; kq < 8u; kq++) {\n\t\t\tlet qa = kq ^ sa;\n\t\t\tlet qb = kq ^ sb;\n")
	for j := 0; j < s.TN; j++ {
		p("\t\t\tlet b%d = Bs[(tx + %du) * 8u + qb];\n", j, j*mx)
	}
	for i := 0; i < s.TM; i++ {
		p("\t\t\t{\n\t\t\t\tlet a = As[(ty + %du) * 8u + qa];\n", i*ny)
		for j := 0; j < s.TN; j++ {
			p("\t\t\t\tc%[1]d_%[2]d = fma(a.w, b%[2]d.w, fma(a.z, b%[2]d.z, fma(a.y, b%[2]d.y, fma(a.x, b%[2]d.x, c%[1]d_%[2]d))));\n", i, j)
		}
		p("\t\t\t}\n")
	}
	p("\t\t}\n\t}\n")
	for i := 0; i < s.TM; i++ {
		p("\t{\n\t\tlet r = m0 + ty + %du;\n\t\tif (r < P.m) {\n\t\t\tlet o = P.off + r * P.stride + P.col0 + n0 + tx;\n", i*ny)
		for j := 0; j < s.TN; j++ {
			p("\t\t\tif (n0 + tx + %[1]du < P.n) { O[o + %[1]du] = c%[2]d_%[3]d; }\n", j*mx, i, j)
		}
		p("\t\t}\n\t}\n")
	}
	p("}\n")
	return w.String()
}

// gemmItem is how the tiled kernel stages one item of a weight: 8
// consecutive elements of a row, starting at a column that is a multiple
// of 8. raw is the WGSL type of its words as loaded; load is a format
// whose two %s are the row and column and whose value is of type raw;
// deq defines w_deq(raw) -> array<vec4<f32>, 2>, the 8 elements as
// tensor.Weight.DecodeRow defines them (float(q)·scale + bias, which
// the device may fuse into one multiply-add).
func gemmItem(a accessor) (raw, load, deq string) {
	k := a.Kind
	var d strings.Builder
	if !k.quantized() {
		switch k.dt {
		case tensor.F32:
			raw, load = "array<vec4<u32>, 2>", "array<vec4<u32>, 2>(w_d[(%[1]s * "+strconv.Itoa(a.Cols)+"u + %[2]s) / 4u], w_d[(%[1]s * "+strconv.Itoa(a.Cols)+"u + %[2]s) / 4u + 1u])"
			d.WriteString("fn w_deq(r: array<vec4<u32>, 2>) -> array<vec4<f32>, 2> {\n\treturn array<vec4<f32>, 2>(bitcast<vec4<f32>>(r[0]), bitcast<vec4<f32>>(r[1]));\n}\n")
		case tensor.F16:
			raw, load = "vec4<u32>", "w_d[(%[1]s * "+strconv.Itoa(a.Cols)+"u + %[2]s) / 8u]"
			d.WriteString("fn w_deq(r: vec4<u32>) -> array<vec4<f32>, 2> {\n\treturn array<vec4<f32>, 2>(vec4<f32>(unpack2x16float(r.x), unpack2x16float(r.y)), vec4<f32>(unpack2x16float(r.z), unpack2x16float(r.w)));\n}\n")
		default: // BF16
			raw, load = "vec4<u32>", "w_d[(%[1]s * "+strconv.Itoa(a.Cols)+"u + %[2]s) / 8u]"
			d.WriteString("fn w_deq(r: vec4<u32>) -> array<vec4<f32>, 2> {\n" +
				"\treturn array<vec4<f32>, 2>(bitcast<vec4<f32>>(vec4<u32>(r.x << 16u, r.x & 0xffff0000u, r.y << 16u, r.y & 0xffff0000u)),\n" +
				"\t\tbitcast<vec4<f32>>(vec4<u32>(r.z << 16u, r.z & 0xffff0000u, r.w << 16u, r.w & 0xffff0000u)));\n}\n")
		}
		return raw, load, d.String()
	}
	// quantized: the level words and the group's scale and bias words
	sraw, sload, sdec := "u32", "w_s[%[1]s * "+strconv.Itoa(a.Cols/k.group)+"u + (%[2]s) / "+strconv.Itoa(k.group)+"u]", ""
	switch k.sdt {
	case tensor.BF16:
		sdec = "vec2<f32>(bitcast<f32>(r.s << 16u), bitcast<f32>(r.s & 0xffff0000u))"
	case tensor.F16:
		sdec = "unpack2x16float(r.s)"
	default:
		sraw = "vec2<u32>"
		g := "(%[1]s * " + strconv.Itoa(a.Cols/k.group) + "u + (%[2]s) / " + strconv.Itoa(k.group) + "u)"
		sload = "vec2<u32>(w_s[2u * " + g + "], w_s[2u * " + g + " + 1u])"
		sdec = "bitcast<vec2<f32>>(r.s)"
	}
	rw := a.Cols * k.bits / 32 // words per row
	var qraw, qload, levels string
	switch k.bits {
	case 4: // one word: 8 levels
		qraw, qload = "u32", "w_w(%[1]s * "+strconv.Itoa(rw)+"u + (%[2]s) / 8u)"
		levels = "vec4<f32>((vec4<u32>(r.q) >> vec4<u32>(0u, 4u, 8u, 12u)) & vec4<u32>(15u)), vec4<f32>((vec4<u32>(r.q) >> vec4<u32>(16u, 20u, 24u, 28u)) & vec4<u32>(15u))"
	case 8: // two words
		qraw, qload = "vec2<u32>", "vec2<u32>(w_w(%[1]s * "+strconv.Itoa(rw)+"u + (%[2]s) / 4u), w_w(%[1]s * "+strconv.Itoa(rw)+"u + (%[2]s) / 4u + 1u))"
		levels = "vec4<f32>((vec4<u32>(r.q.x) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u)), vec4<f32>((vec4<u32>(r.q.y) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(255u))"
	case 2: // half a word, shifted down at load
		qraw, qload = "u32", "(w_w(%[1]s * "+strconv.Itoa(rw)+"u + (%[2]s) / 16u) >> (((%[2]s) & 8u) * 2u))"
		levels = "vec4<f32>((vec4<u32>(r.q) >> vec4<u32>(0u, 2u, 4u, 6u)) & vec4<u32>(3u)), vec4<f32>((vec4<u32>(r.q) >> vec4<u32>(8u, 10u, 12u, 14u)) & vec4<u32>(3u))"
	default: // 3, 5, 6 bits: levels that straddle words, read one by one
		qraw = "vec4<u32>" // levels 0-3; 4-7 in a second field
		qload = ""
	}
	if qload == "" {
		raw = "WI"
		d.WriteString("struct WI { q0: vec4<u32>, q1: vec4<u32>, s: " + sraw + " }\n")
		var e [8]string
		for j := range e {
			e[j] = fmt.Sprintf("w_q(%%[1]s, (%%[2]s) + %du)", j)
		}
		load = "WI(vec4<u32>(" + strings.Join(e[:4], ", ") + "), vec4<u32>(" + strings.Join(e[4:], ", ") + "), " + sload + ")"
		d.WriteString("fn w_deq(r: WI) -> array<vec4<f32>, 2> {\n\tlet sb = " + sdec + ";\n" +
			"\treturn array<vec4<f32>, 2>(fma(vec4<f32>(r.q0), vec4<f32>(sb.x), vec4<f32>(sb.y)), fma(vec4<f32>(r.q1), vec4<f32>(sb.x), vec4<f32>(sb.y)));\n}\n")
		return raw, load, d.String()
	}
	raw = "WI"
	d.WriteString("struct WI { q: " + qraw + ", s: " + sraw + " }\n")
	load = "WI(" + qload + ", " + sload + ")"
	d.WriteString("fn w_deq(r: WI) -> array<vec4<f32>, 2> {\n\tlet sb = " + sdec + ";\n\tlet l = array<vec4<f32>, 2>(" + levels + ");\n" +
		"\treturn array<vec4<f32>, 2>(fma(l[0], vec4<f32>(sb.x), vec4<f32>(sb.y)), fma(l[1], vec4<f32>(sb.x), vec4<f32>(sb.y)));\n}\n")
	return raw, load, d.String()
}
