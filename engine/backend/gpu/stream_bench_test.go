package gpu

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cogentcore/webgpu/wgpu"

	"hearth/engine/tensor"
)

var (
	streamMB  = flag.String("gpustream.mb", "9.4,33,66,200", "buffer sizes in MB BenchmarkStream reads")
	streamRep = flag.Int("gpustream.rep", 16, "dispatches per timed pass (each reads its own buffer, so L2 does not serve repeats)")
)

// BenchmarkStream measures what a WGSL kernel on this adapter can read
// from device memory, and what one dispatch costs, as a ceiling for the
// matrix-vector kernels: each dispatch of a pass reads its own buffer of
// the given size once (vec4<u32> loads, coalesced), with a barrier between
// dispatches as in a decode step. Logged per variant: µs per dispatch and
// GB/s.
func BenchmarkStream(b *testing.B) {
	be := newBackend(b, Options{})
	if !be.timestamps {
		b.Skip("adapter has no timestamp queries")
	}
	out := mustBuf(b, be, 256, wgpu.BufferUsageStorage)
	defer out.Release()
	rep := *streamRep
	// dispatch overhead: a kernel that does nothing but one store
	for _, wgs := range []uint32{1, 132, 1024} {
		src := "@group(0) @binding(0) var<storage, read_write> O: array<u32>;\n@compute @workgroup_size(256)\nfn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {\n\tif (li == 0u && wid.x == 0u) { O[0] = O[0] + 1u; }\n}\n"
		d := timePass(b, be, src, rep, func(int) []wgpu.BindGroupEntry {
			return []wgpu.BindGroupEntry{{Binding: 0, Buffer: out, Size: 256}}
		}, [3]uint32{wgs, 1, 1})
		b.Logf("empty kernel, %4d workgroups: %6.2f µs per dispatch", wgs, float64(d.Nanoseconds())/1e3)
	}
	for _, f := range strings.Split(*streamMB, ",") {
		mb, err := strconv.ParseFloat(f, 64)
		if err != nil {
			b.Fatal(err)
		}
		size := uint64(mb*1e6) &^ 4095
		bufs := make([]*wgpu.Buffer, rep)
		for i := range bufs {
			bufs[i] = mustBuf(b, be, size, wgpu.BufferUsageStorage)
		}
		vecs := size / 16
		for _, wg := range []int{128, 256} {
			for _, u := range []int{1, 2, 4, 8, 16} {
				per := uint64(wg * u)
				n := (vecs + per - 1) / per
				grid := [3]uint32{uint32(min(n, 65535)), uint32((n + 65534) / 65535), 1}
				d := timePass(b, be, streamSource(wg, u, vecs), rep, func(i int) []wgpu.BindGroupEntry {
					return []wgpu.BindGroupEntry{{Binding: 0, Buffer: bufs[i], Size: size}, {Binding: 1, Buffer: out, Size: 256}}
				}, grid)
				b.Logf("stream %6.1f MB, %3d threads × %2d vec4: %8.2f µs %7.0f GB/s", mb, wg, u, float64(d.Nanoseconds())/1e3, float64(size)/d.Seconds()/1e9)
			}
		}
		for _, bf := range bufs {
			bf.Release()
		}
	}
}

func mustBuf(b testing.TB, be *Backend, size uint64, usage wgpu.BufferUsage) *wgpu.Buffer {
	buf, err := be.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "stream", Size: size, Usage: usage})
	if err != nil {
		b.Fatal(err)
	}
	return buf
}

// timePass compiles src, then runs rep dispatches of it in one compute
// pass (dispatch i bound by entries(i)) between two timestamps, three
// times, and returns the fastest pass's time per dispatch.
func timePass(b testing.TB, be *Backend, src string, rep int, entries func(int) []wgpu.BindGroupEntry, grid [3]uint32) time.Duration {
	b.Helper()
	pipe, err := be.pipeline("stream", src)
	if err != nil {
		b.Fatal(err)
	}
	groups := make([]*wgpu.BindGroup, rep)
	for i := range groups {
		if groups[i], err = be.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: be.layout(pipe), Entries: entries(i)}); err != nil {
			b.Fatal(err)
		}
		defer groups[i].Release()
	}
	timer, err := be.newPassTimer()
	if err != nil {
		b.Fatal(err)
	}
	defer timer.release()
	best := time.Duration(1 << 62)
	for try := 0; try < 3; try++ {
		d, err := timer.run(be, pipe, groups, grid)
		if err != nil {
			b.Fatal(err)
		}
		if d := d / time.Duration(rep); d > 0 && d < best {
			best = d
		}
	}
	return best
}

var q4Kind = kind{dt: tensor.U32, bits: 4, group: 64, sdt: tensor.BF16}

// mvProto is a candidate one-row matrix-vector kernel for 4-bit weights:
// T invocations, L lanes per row, R rows per invocation; the weight words
// of B block iterations are loaded before their arithmetic; x is staged in
// workgroup memory (as the row kernel does) or read from memory (XG).
type mvProto struct {
	T, L, R, B int
	XG         bool
	// Ablate removes a part to see what it costs: "noalu" keeps the loads
	// but replaces the dequantizing dot product by a few integer ops;
	// "noload" keeps the arithmetic on words made from the indices.
	Ablate string
}

func (p mvProto) String() string {
	x := "shared x"
	if p.XG {
		x = "global x"
	}
	return fmt.Sprintf("T%d L%d R%d B%d %s %s", p.T, p.L, p.R, p.B, x, p.Ablate)
}

func (p mvProto) rows() int { return p.T / p.L * p.R }

func (p mvProto) fits(k int) bool {
	kb := k / 32
	it := kb / p.L
	return kb%p.L == 0 && it%p.B == 0 && (p.XG || kb <= 256)
}

func (p mvProto) source(s *mvSpec) string {
	var w strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	s.bindings(&w, true)
	s.storeFunc(&w, 0)
	kb := s.K / 32
	f("const K4: u32 = %du;\nconst KB: u32 = %du;\nconst CB: u32 = KB;\n", s.K/4, kb)
	f("var<workgroup> red: array<f32, %d>;\n", p.T*p.R)
	if !p.XG {
		f("var<workgroup> xsh: array<vec4<f32>, %d>;\nvar<workgroup> xbs: array<f32, %d>;\n", kb*8, kb)
	}
	f("@compute @workgroup_size(%d)\nfn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n", p.T)
	f("\tlet wg = wid.x + wid.y * nwg.x;\n\tif (wg >= P.wgt) {\n\t\treturn;\n\t}\n\tlet m0 = 0u;\n\tlet c = 0u;\n")
	if !p.XG {
		var st strings.Builder
		s.stage(&st, "\t", false)
		f("%s", strings.ReplaceAll(st.String(), "lb += 256u", fmt.Sprintf("lb += %du", p.T)))
		f("\tworkgroupBarrier();\n")
	}
	f("\tlet lane = li %% %du;\n\tlet row0 = wg * %du + (li / %du) * %du;\n", p.L, p.rows(), p.L, p.R)
	for r := 0; r < p.R; r++ {
		f("\tlet rw%d = min(row0 + %du, P.n0 - 1u);\n\tvar a%d = 0.0;\n", r, r, r)
	}
	iters := kb / p.L
	f("\tfor (var it = 0u; it < %du; it += %du) {\n", iters, p.B)
	for b := 0; b < p.B; b++ {
		f("\t\tlet blk%d = (it + %du) * %du + lane;\n", b, b, p.L)
		for r := 0; r < p.R; r++ {
			if p.Ablate == "noload" {
				// one word of each binding, the same for every invocation
				// (the bindings must stay in the layout)
				f("\t\tlet r%d_%d = array<vec4<u32>, 1>(vec4<u32>(blk%d * 2654435761u, rw%d, blk%d ^ rw%d, w0_d[0].x));\n\t\tlet s%d_%d = blk%d | w0_s[0];\n", b, r, b, r, b, r, b, r, b)
			} else {
				f("\t\tlet r%d_%d = w0_raw(rw%d, blk%d);\n\t\tlet s%d_%d = w0_sraw(rw%d, blk%d);\n", b, r, r, b, b, r, r, b)
			}
		}
	}
	for b := 0; b < p.B; b++ {
		f("\t\t{\n")
		if p.XG {
			for j := 0; j < 8; j++ {
				f("\t\t\tlet v%d = X[blk%d * 8u + %du];\n", j, b, j)
			}
			f("\t\t\tlet t = v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7;\n\t\t\tlet xs = t.x + t.y + t.z + t.w;\n")
			for j := 0; j < 8; j++ {
				f("\t\t\tlet x%d = v%d%s;\n", j, j, s.xScale(j))
			}
		} else {
			f("\t\t\tlet lb = blk%d;\n\t\t\tlet o = lb * 8u;\n\t\t\tlet sw = lb & 7u;\n", b)
			for j := 0; j < 8; j++ {
				f("\t\t\tlet x%d = xsh[o + (%du ^ sw)];\n", j, j)
			}
			f("\t\t\tlet xs = xbs[lb];\n")
		}
		for r := 0; r < p.R; r++ {
			if p.Ablate == "noalu" {
				f("\t\t\ta%d += bitcast<f32>(((r%d_%d[0].x ^ r%d_%d[0].y ^ r%d_%d[0].z ^ r%d_%d[0].w ^ s%d_%d) & 0x007fffffu) | 0x3f800000u) * xs;\n", r, b, r, b, r, b, r, b, r, b, r)
			} else {
				f("\t\t\ta%d += w0_dotr(r%d_%d, s%d_%d, x0, x1, x2, x3, x4, x5, x6, x7, xs);\n", r, b, r, b, r)
			}
		}
		f("\t\t}\n")
	}
	f("\t}\n")
	for r := 0; r < p.R; r++ {
		f("\tred[%du + li] = a%d;\n", r*p.T, r)
	}
	f("\tworkgroupBarrier();\n\tif (li >= %du) {\n\t\treturn;\n\t}\n", p.rows())
	f("\tlet grp = li / %du;\n\tlet r = li %% %du;\n\tvar v = 0.0;\n", p.R, p.R)
	f("\tfor (var l = 0u; l < %du; l++) {\n\t\tv += red[r * %du + grp * %du + ((l + li) & %du)];\n\t}\n", p.L, p.T, p.L, p.L-1)
	f("\tstore0(wg * %du + li, 0u, v);\n}\n", p.rows())
	return w.String()
}

var (
	mvProtos = flag.String("gpustream.protos", "", "matvec prototypes BenchmarkMatVecProto runs, as T.L.R.B[g] (g: x from memory), with -noalu or -noload to ablate (mvProto.Ablate), comma-separated; empty: a built-in sweep; none: no prototypes")
	mvRows   = flag.String("gpustream.rows", "", "row kernel shapes BenchmarkMatVecProto also times, as RxLbB (rows x lanes, load batch), comma-separated, e.g. 2x16b1,2x32b4,4x16b2")
	mvTall   = flag.String("gpustream.n", "", "more output row counts of a 4096-wide matrix BenchmarkMatVecProto times, comma-separated (how the workgroup count alone moves the read rate)")
)

// parseRowShapes reads -gpustream.rows (row kernel shapes only).
func parseRowShapes(list string) ([]MatVecShape, error) {
	var shapes []MatVecShape
	if list == "" {
		return nil, nil
	}
	for _, f := range strings.Split(list, ",") {
		sh, err := ParseMatVecShape(f)
		if err != nil {
			return nil, err
		}
		if sh.Cols != 0 {
			return nil, fmt.Errorf("-gpustream.rows entry %q: want a row kernel shape, RxL or RxLbB", f)
		}
		shapes = append(shapes, sh)
	}
	return shapes, nil
}

// BenchmarkMatVecProto times the row kernel and candidate matrix-vector
// kernels (mvProto, and the row kernel in the shapes of
// -gpustream.rows) on the 8B shape's 4-bit matrices, each dispatch on its
// own weights, and checks each candidate's output against the default row
// kernel's on random weights.
func BenchmarkMatVecProto(b *testing.B) {
	be := newBackend(b, Options{})
	if !be.timestamps {
		b.Skip("adapter has no timestamp queries")
	}
	rowShapes, err := parseRowShapes(*mvRows)
	if err != nil {
		b.Fatal(err)
	}
	protos := []mvProto{}
	if *mvProtos == "" {
		for _, t := range []int{128, 256} {
			for _, l := range []int{8, 16, 32} {
				for _, r := range []int{1, 2, 4} {
					for _, bb := range []int{1, 2, 4} {
						for _, xg := range []bool{false, true} {
							protos = append(protos, mvProto{T: t, L: l, R: r, B: bb, XG: xg})
						}
					}
				}
			}
		}
	} else if *mvProtos != "none" {
		for _, f := range strings.Split(*mvProtos, ",") {
			var p mvProto
			f, p.Ablate, _ = strings.Cut(f, "-")
			g := strings.HasSuffix(f, "g")
			if _, err := fmt.Sscanf(strings.TrimSuffix(f, "g"), "%d.%d.%d.%d", &p.T, &p.L, &p.R, &p.B); err != nil {
				b.Fatalf("-gpustream.protos %q: %v", f, err)
			}
			p.XG = g
			protos = append(protos, p)
		}
	}
	rep := *streamRep
	type matShape struct {
		name string
		k, n int
	}
	mats := []matShape{{"o_proj k4096 n4096", 4096, 4096}, {"gate k4096 n14336", 4096, 14336}, {"down k14336 n4096", 14336, 4096}}
	if *mvTall != "" {
		for _, f := range strings.Split(*mvTall, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("-gpustream.n entry %q: want a row count", f)
			}
			mats = append(mats, matShape{fmt.Sprintf("k4096 n%d", n), 4096, n})
		}
	}
	for _, sh := range mats {
		dataBytes, sbBytes := uint64(sh.n*sh.k/2), uint64(sh.n*sh.k/64*4)
		type wbuf struct{ d, s *wgpu.Buffer }
		ws := make([]wbuf, rep)
		for i := range ws {
			ws[i] = wbuf{mustBuf(b, be, dataBytes, wgpu.BufferUsageStorage|wgpu.BufferUsageCopyDst), mustBuf(b, be, sbBytes, wgpu.BufferUsageStorage|wgpu.BufferUsageCopyDst)}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		words := make([]byte, dataBytes)
		for i := range words {
			words[i] = byte(rng.Uint32())
		}
		be.queue.WriteBuffer(ws[0].d, 0, words)
		sb := make([]byte, sbBytes)
		for i := 0; i < len(sb); i += 4 {
			sc := math.Float32bits(float32(rng.Float64()*0.02 + 0.001))
			bi := math.Float32bits(float32(rng.Float64()*0.02 - 0.01))
			binary.LittleEndian.PutUint32(sb[i:], sc>>16|bi&0xffff0000)
		}
		be.queue.WriteBuffer(ws[0].s, 0, sb)
		xb := make([]byte, sh.k*4)
		for i := 0; i < len(xb); i += 4 {
			binary.LittleEndian.PutUint32(xb[i:], math.Float32bits(float32(rng.NormFloat64())))
		}
		x := mustBuf(b, be, uint64(len(xb)), wgpu.BufferUsageStorage|wgpu.BufferUsageCopyDst)
		be.queue.WriteBuffer(x, 0, xb)
		out := mustBuf(b, be, uint64(sh.n*4), wgpu.BufferUsageStorage|wgpu.BufferUsageCopySrc)
		read := mustBuf(b, be, uint64(sh.n*4), wgpu.BufferUsageMapRead|wgpu.BufferUsageCopyDst)
		params := mustBuf(b, be, 64, wgpu.BufferUsageUniform|wgpu.BufferUsageCopyDst)
		spec := func() *mvSpec {
			return &mvSpec{K: sh.k, Lanes: 16, Rows: 2, MB: 1, XBind: 1, W: []accessor{{Name: "w0", Bind: 2, Kind: q4Kind, Cols: sh.k, Block: true}},
				Out: []int{4}, Res: []int{-1}, Bias: []*accessor{nil}}
		}
		// runGrid dispatches groups workgroups (0: one per rows rows)
		runGrid := func(label, src string, rows, groups int) []float32 {
			wgt := uint32((sh.n + rows - 1) / rows)
			grid := wgt
			if groups > 0 {
				grid = uint32(groups)
			}
			var pr [16]uint32
			pr[0], pr[1], pr[4], pr[6], pr[12] = 1, uint32(sh.n), wgt, wgt, uint32(sh.n)
			pb := make([]byte, 64)
			for i, v := range pr {
				binary.LittleEndian.PutUint32(pb[i*4:], v)
			}
			be.queue.WriteBuffer(params, 0, pb)
			d := timePass(b, be, src, rep, func(i int) []wgpu.BindGroupEntry {
				return []wgpu.BindGroupEntry{{Binding: 0, Buffer: params, Size: 64}, {Binding: 1, Buffer: x, Size: uint64(len(xb))},
					{Binding: 2, Buffer: ws[i].d, Size: dataBytes}, {Binding: 3, Buffer: ws[i].s, Size: sbBytes}, {Binding: 4, Buffer: out, Size: uint64(sh.n * 4)}}
			}, [3]uint32{grid, 1, 1})
			// the last dispatch of the pass used ws[rep-1]; run once on ws[0]
			enc, _ := be.dev.CreateCommandEncoder(nil)
			pipe, _ := be.pipeline(label, src)
			g, err := be.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: be.layout(pipe), Entries: []wgpu.BindGroupEntry{{Binding: 0, Buffer: params, Size: 64}, {Binding: 1, Buffer: x, Size: uint64(len(xb))},
				{Binding: 2, Buffer: ws[0].d, Size: dataBytes}, {Binding: 3, Buffer: ws[0].s, Size: sbBytes}, {Binding: 4, Buffer: out, Size: uint64(sh.n * 4)}}})
			if err != nil {
				b.Fatal(err)
			}
			pass := enc.BeginComputePass(nil)
			pass.SetPipeline(pipe)
			pass.SetBindGroup(0, g, nil)
			pass.DispatchWorkgroups(grid, 1, 1)
			pass.End()
			pass.Release()
			enc.CopyBufferToBuffer(out, 0, read, 0, uint64(sh.n*4))
			cmd, _ := enc.Finish(nil)
			be.queue.Submit(cmd)
			cmd.Release()
			enc.Release()
			g.Release()
			raw := make([]byte, sh.n*4)
			if err := be.mapBytes(read, 0, raw); err != nil {
				b.Fatal(err)
			}
			res := make([]float32, sh.n)
			for i := range res {
				res[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[i*4:]))
			}
			gbs := float64(dataBytes+sbBytes) / d.Seconds() / 1e9
			b.Logf("%-20s %-28s %8.2f µs %6.0f GB/s", sh.name, label, float64(d.Nanoseconds())/1e3, gbs)
			return res
		}
		run := func(label, src string, rows int) []float32 { return runGrid(label, src, rows, 0) }
		limit := int(be.limits.MaxComputeWorkgroupStorageSize)
		s := spec()
		s.CB = s.chunkBlocks(limit)
		ref := run("row kernel 2x16", s.source(), s.rowsPerWG())
		check := func(label string, got []float32) {
			worst := 0.0
			for i := range ref {
				worst = max(worst, math.Abs(float64(got[i]-ref[i]))/(1+math.Abs(float64(ref[i]))))
			}
			if worst > 1e-4 {
				b.Errorf("%s %s: differs from the row kernel by %.3g", sh.name, label, worst)
			}
		}
		for _, rs := range rowShapes {
			rs = rs.withDefaults()
			s := spec()
			s.Lanes, s.Rows, s.B = rs.Lanes, rs.Rows, rs.Batch
			s.CB = s.chunkBlocks(limit)
			label := fmt.Sprintf("row kernel %dx%db%d", rs.Rows, rs.Lanes, rs.Batch)
			check(label, run(label, s.source(), s.rowsPerWG()))
		}
		for _, p := range protos {
			if !p.fits(sh.k) {
				continue
			}
			got := run(p.String(), p.source(spec()), p.rows())
			if p.Ablate == "" {
				check(p.String(), got)
			}
		}
		for _, w := range ws {
			w.d.Release()
			w.s.Release()
		}
		x.Release()
		out.Release()
		read.Release()
		params.Release()
	}
}
