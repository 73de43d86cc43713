package cpu

import (
	"unsafe"

	"hearth/engine/tensor"

	"golang.org/x/sys/cpu"
)

//go:generate go run gen_amd64.go gen_matvec_amd64.go gen_gemm_amd64.go gen_misc_amd64.go

// available lists the kernel sets this CPU runs, fastest first: AVX-512
// (F and VL, with AVX2, FMA and F16C), then AVX2 with FMA and F16C, then
// pure Go.
func available() []*kernels {
	var out []*kernels
	x := cpu.X86
	hasAVX2 := x.HasAVX2 && x.HasFMA && x.HasF16C && x.HasOSXSAVE
	if hasAVX2 && x.HasAVX512F && x.HasAVX512VL {
		if x.HasAVX512BW && x.HasAVX512VNNI {
			out = append(out, avx512VNNIKernels)
		} else {
			out = append(out, avx512Kernels)
		}
	}
	if hasAVX2 {
		out = append(out, avx2Kernels)
	}
	return append(out, generic)
}

var avx512Kernels = &kernels{
	name:  "avx512",
	q4:    func(a qargs) { qcall(a, 4, q4BF16AVX512, q4F16AVX512) },
	q8:    func(a qargs) { qcall(a, 8, q8BF16AVX512, q8F16AVX512) },
	qrows: func(a qargs, bits int) bool { return quantRows(a, bits, avx512Rows) },
	perm:  32,
	dense: func(a dargs) {
		denseCall(a, 16, [3]denseFn{denseF32AVX512, denseF16AVX512, denseBF16AVX512})
	},
	deq: func(m *mat, r, k0 int, dst []float32) bool {
		if !m.quant {
			return widenCall(m, r, k0, dst, 16, widenBF16AVX512, widenF16AVX512)
		}
		return deqCall(m, r, k0, dst, [4]deqFn{deq4BF16AVX512, deq4F16AVX512, deq8BF16AVX512, deq8F16AVX512})
	},
	mr: 12, nr: 32,
	gemm: func(kc int, a []float32, lda int, b, c []float32, ldc int, accumulate bool) {
		_, _, _ = a[11*lda+kc-1], b[kc*32-1], c[11*ldc+31]
		gemmAVX512(kc, &a[0], lda, &b[0], &c[0], ldc, accumulate)
	},
	dot:    func(a, b []float32) float32 { return dotCall(a, b, 16, dotAVX512) },
	axpy:   func(alpha float32, x, y []float32) { axpyCall(alpha, x, y, 16, axpyAVX512) },
	expSum: func(x []float32, mx float32) float32 { return expSumCall(x, mx, 16, expSumAVX512) },
	silu:   func(x, out []float32) { siluCall(x, out, 16, siluAVX512) },
}

// avx512VNNIKernels is the AVX-512 set plus the int8-activation kernels
// that Options.Int8Activations turns on.
var avx512VNNIKernels = func() *kernels {
	k := *avx512Kernels
	k.name = "avx512vnni"
	// the unrolled 4-bit kernels broadcast 16-bit scales (AVX-512 BW,
	// which this set has)
	k.q4 = func(a qargs) {
		if fn := q4Wide(a); fn != nil {
			qcallWide(a, fn)
			return
		}
		qcall(a, 4, q4BF16AVX512, q4F16AVX512)
	}
	k.qrows = func(a qargs, bits int) bool {
		if fn := q4WideRows(a); bits == 4 && fn != nil {
			qcallWideRows(a, fn)
			return true
		}
		return quantRows(a, bits, avx512Rows)
	}
	// the int8 GEMM: 6×32 VPDPBUSD, blocks of up to 64, 4- and 8-bit
	k.i8mr, k.i8nr, k.i8steps, k.i8gemm8, k.gemmI8 = 6, 32, 16, true, gemmI8VNNIKernel
	k.quantI8 = func(x []float32, xq8, xq4 []int8, dv8, dv4 []float32, c4 int) {
		n := len(x)
		if n%c4 != 0 || c4%32 != 0 || len(xq8) < n || len(xq4) < n || len(dv8) < n/4 || len(dv4) < n/8 {
			panic("cpu: int8 quantizer arguments do not fit")
		}
		quantizeI8AVX512(&x[0], &xq8[0], &xq4[0], &dv8[0], &dv4[0], n/c4, c4/32)
	}
	k.i8 = map[i8key]i8fn{
		{4, 32, false, false}: q4I8G32BF16, {4, 64, false, false}: q4I8G64BF16, {4, 128, false, false}: q4I8G128BF16,
		{4, 32, true, false}: q4I8G32F16, {4, 64, true, false}: q4I8G64F16, {4, 128, true, false}: q4I8G128F16,
		{8, 32, false, false}: q8I8G32BF16, {8, 64, false, false}: q8I8G64BF16,
		{8, 32, true, false}: q8I8G32F16, {8, 64, true, false}: q8I8G64F16,
		// 4-bit rows of an odd number of 64-element chunks, on ymm
		{4, 32, false, true}: q4I8H32BF16, {4, 64, false, true}: q4I8H64BF16,
		{4, 32, true, true}: q4I8H32F16, {4, 64, true, true}: q4I8H64F16,
	}
	return &k
}()

var avx2Kernels = &kernels{
	name:  "avx2",
	q4:    func(a qargs) { qcall(a, 4, q4BF16AVX2, q4F16AVX2) },
	q8:    func(a qargs) { qcall(a, 8, q8BF16AVX2, q8F16AVX2) },
	qrows: func(a qargs, bits int) bool { return quantRows(a, bits, avx2Rows) },
	perm:  16,
	dense: func(a dargs) {
		denseCall(a, 8, [3]denseFn{denseF32AVX2, denseF16AVX2, denseBF16AVX2})
	},
	deq: func(m *mat, r, k0 int, dst []float32) bool {
		if !m.quant {
			return widenCall(m, r, k0, dst, 8, widenBF16AVX2, widenF16AVX2)
		}
		return deqCall(m, r, k0, dst, [4]deqFn{deq4BF16AVX2, deq4F16AVX2, deq8BF16AVX2, deq8F16AVX2})
	},
	i8: map[i8key]i8fn{
		{4, 32, false, true}: q4I8H32BF16AVX2, {4, 64, false, true}: q4I8H64BF16AVX2,
		{4, 32, true, true}: q4I8H32F16AVX2, {4, 64, true, true}: q4I8H64F16AVX2,
	},
	i8half: true,
	i8mr:   2, i8nr: 16, i8steps: 8,
	gemmI8: func(blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool) {
		gemmI8Call(2, 16, blocks, steps, w, sc, bi, x, d, xs, c, accumulate, gemmI8AVX2)
	},
	mr: 6, nr: 16,
	gemm: func(kc int, a []float32, lda int, b, c []float32, ldc int, accumulate bool) {
		_, _, _ = a[5*lda+kc-1], b[kc*16-1], c[5*ldc+15]
		gemmAVX2(kc, &a[0], lda, &b[0], &c[0], ldc, accumulate)
	},
	dot:    func(a, b []float32) float32 { return dotCall(a, b, 8, dotAVX2) },
	axpy:   func(alpha float32, x, y []float32) { axpyCall(alpha, x, y, 8, axpyAVX2) },
	expSum: func(x []float32, mx float32) float32 { return expSumCall(x, mx, 8, expSumAVX2) },
	silu:   func(x, out []float32) { siluCall(x, out, 8, siluAVX2) },
}

// gemmI8VNNIKernel runs gemmI8VNNI, the 6×32 AVX-512 VNNI int8 GEMM
// microkernel (blocks of up to 16 steps, 4- and 8-bit levels).
func gemmI8VNNIKernel(blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool) {
	gemmI8Call(6, 32, blocks, steps, w, sc, bi, x, d, xs, c, accumulate, gemmI8VNNI)
}

type gemmI8Fn func(blocks, steps int, w *byte, sc, bi *float32, x *int8, d, xs, c *float32, accumulate bool)

// gemmI8Call checks the slices against an mr×nr tile of blocks·steps
// 4-element steps and runs an int8 GEMM microkernel.
func gemmI8Call(mr, nr, blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool, fn gemmI8Fn) {
	if blocks <= 0 || steps <= 0 || len(w) < blocks*steps*nr || len(sc) < blocks*nr || len(bi) < blocks*nr ||
		len(x) < blocks*steps*mr || len(d) < blocks*mr || len(xs) < blocks*mr || len(c) < mr*nr {
		panic("cpu: int8 GEMM kernel arguments do not fit the shape")
	}
	fn(blocks, steps, (*byte)(unsafe.Pointer(&w[0])), &sc[0], &bi[0], (*int8)(unsafe.Pointer(&x[0])), &d[0], &xs[0], &c[0], accumulate)
}

type qfn func(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)

// qcall checks the slices against the shape (the assembly trusts it) and
// calls the bf16- or f16-scale kernel.
func qcall(a qargs, bits int, bf16, f16 qfn) {
	if a.rows == 0 {
		return
	}
	cols := a.groups * a.group
	if a.group%32 != 0 || len(a.x) < cols || len(a.xsum) < a.groups || len(a.out) < a.rows ||
		len(a.scales) < 2*a.rows*a.groups || len(a.biases) < 2*a.rows*a.groups || len(a.w) != a.rows*cols*bits/8 {
		panic("cpu: quantized kernel arguments do not fit the shape")
	}
	fn := bf16
	if a.f16 {
		fn = f16
	}
	fn(&a.w[0], (*uint16)(unsafe.Pointer(&a.scales[0])), (*uint16)(unsafe.Pointer(&a.biases[0])),
		&a.x[0], &a.xsum[0], &a.out[0], a.rows, a.groups, a.group/32)
}

// q4Wide is the unrolled 4-bit kernel (quantWide) for a's rows, or nil
// when their length is not a multiple of 128 or the group size is not one
// it was written for.
func q4Wide(a qargs) qfn {
	if (a.groups*a.group)%128 != 0 {
		return nil
	}
	i := 0
	if a.f16 {
		i = 3
	}
	switch a.group {
	case 32:
	case 64:
		i++
	case 128:
		i += 2
	default:
		return nil
	}
	return [6]qfn{q4W32BF16AVX512, q4W64BF16AVX512, q4W128BF16AVX512, q4W32F16AVX512, q4W64F16AVX512, q4W128F16AVX512}[i]
}

// qcallWide checks the slices against the shape and runs a quantWide
// kernel (which reads x in 128-element steps and xsum in 16-group steps
// only up to the row's length).
func qcallWide(a qargs, fn qfn) {
	if a.rows == 0 {
		return
	}
	cols := a.groups * a.group
	if len(a.x) < cols || len(a.xsum) < a.groups || len(a.out) < a.rows ||
		len(a.scales) < 2*a.rows*a.groups || len(a.biases) < 2*a.rows*a.groups || len(a.w) != a.rows*cols/2 {
		panic("cpu: quantized kernel arguments do not fit the shape")
	}
	fn(&a.w[0], (*uint16)(unsafe.Pointer(&a.scales[0])), (*uint16)(unsafe.Pointer(&a.biases[0])),
		&a.x[0], &a.xsum[0], &a.out[0], a.rows, a.groups, cols/128)
}

type qrowsFn func(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

// rowsKernels are one set's quantRows kernels by [inputs/2-1][bits/8]
// [f16]; nil where the set has none.
type rowsKernels [2][2][2]qrowsFn

var (
	avx512Rows = rowsKernels{
		{{q4BF16AVX512x2, q4F16AVX512x2}, {q8BF16AVX512x2, q8F16AVX512x2}},
		{{q4BF16AVX512x4, q4F16AVX512x4}, {q8BF16AVX512x4, q8F16AVX512x4}},
	}
	avx2Rows = rowsKernels{{{q4BF16AVX2x2, q4F16AVX2x2}, {q8BF16AVX2x2, q8F16AVX2x2}}}
)

// quantRows runs ks' quantRows kernel for a, or reports false where there
// is none (2 or 4 inputs, 4 or 8 bits, groups of a multiple of 32).
func quantRows(a qargs, bits int, ks rowsKernels) bool {
	if (a.inputs != 2 && a.inputs != 4) || (bits != 4 && bits != 8) || a.group%32 != 0 {
		return false
	}
	f16 := 0
	if a.f16 {
		f16 = 1
	}
	fn := ks[a.inputs/2-1][bits/8][f16]
	if fn == nil {
		return false
	}
	callRows(a, bits, a.group/32, fn)
	return true
}

// q4WideRows is quantWideRows' kernel for a (q4Wide's shapes, 2 or 4
// inputs), or nil.
func q4WideRows(a qargs) qrowsFn {
	if q4Wide(a) == nil || (a.inputs != 2 && a.inputs != 4) {
		return nil
	}
	i := 0 // by group size: 32, 64, 128 (q4Wide took no other)
	switch a.group {
	case 64:
		i = 1
	case 128:
		i = 2
	}
	if a.f16 {
		i += 3
	}
	fns := [2][6]qrowsFn{
		{q4W32BF16AVX512x2, q4W64BF16AVX512x2, q4W128BF16AVX512x2, q4W32F16AVX512x2, q4W64F16AVX512x2, q4W128F16AVX512x2},
		{q4W32BF16AVX512x4, q4W64BF16AVX512x4, q4W128BF16AVX512x4, q4W32F16AVX512x4, q4W64F16AVX512x4, q4W128F16AVX512x4},
	}
	return fns[a.inputs/4][i]
}

// qcallWideRows runs a quantWideRows kernel (128 weights a step).
func qcallWideRows(a qargs, fn qrowsFn) { callRows(a, 4, a.groups*a.group/128, fn) }

// callRows checks the slices against a.inputs rows of the shape (the last
// input row need only be as long as one row; the assembly trusts them)
// and runs a several-rows kernel, which takes steps as its third count.
func callRows(a qargs, bits, steps int, fn qrowsFn) {
	if a.rows == 0 {
		return
	}
	cols, last := a.groups*a.group, a.inputs-1
	if a.xstride < cols || a.ostride < a.rows || len(a.x) < last*a.xstride+cols || len(a.xsum) < (last+1)*a.groups ||
		len(a.out) < last*a.ostride+a.rows || len(a.scales) < 2*a.rows*a.groups || len(a.biases) < 2*a.rows*a.groups ||
		len(a.w) != a.rows*cols*bits/8 {
		panic("cpu: quantized kernel arguments do not fit the shape")
	}
	fn(&a.w[0], (*uint16)(unsafe.Pointer(&a.scales[0])), (*uint16)(unsafe.Pointer(&a.biases[0])),
		&a.x[0], &a.xsum[0], &a.out[0], a.rows, a.groups, steps, 4*a.xstride, 4*a.groups, 4*a.ostride)
}

type deqFn func(w *byte, scales, biases *uint16, out *float32, groups, blocks int)

// deqCall runs a dequantizer on whole groups of 4- or 8-bit weights with
// bf16 or f16 scales (fns: 4-bit bf16, 4-bit f16, 8-bit bf16, 8-bit f16).
func deqCall(m *mat, r, k0 int, dst []float32, fns [4]deqFn) bool {
	gs := m.group
	if (m.bits != 4 && m.bits != 8) || gs%32 != 0 || k0%gs != 0 || len(dst)%gs != 0 || len(dst) == 0 ||
		(m.sdt != tensor.BF16 && m.sdt != tensor.F16) || k0+len(dst) > m.cols || r >= m.rows {
		return false
	}
	i := 0
	if m.sdt == tensor.F16 {
		i = 1
	}
	if m.bits == 8 {
		i += 2
	}
	g0 := r*(m.cols/gs) + k0/gs
	w := m.data[r*m.rowBytes+k0*m.bits/8:]
	fns[i](&w[0], (*uint16)(unsafe.Pointer(&m.scales[2*g0])), (*uint16)(unsafe.Pointer(&m.biases[2*g0])), &dst[0], len(dst)/gs, gs/32)
	return true
}

// widenCall converts a dense BF16 or F16 row segment with the vector
// kernel and its tail in Go; F32 and node operands are left to decodeSeg.
func widenCall(m *mat, r, k0 int, dst []float32, lanes int, bf16, f16 func(src *byte, dst *float32, blocks int)) bool {
	if m.f != nil || m.dt == dtF32 || k0+len(dst) > m.cols || r >= m.rows {
		return false
	}
	fn, dt := bf16, tensor.BF16
	if m.dt == dtF16 {
		fn, dt = f16, tensor.F16
	}
	start := r*m.cols + k0
	blocks := len(dst) / lanes
	if blocks > 0 {
		fn(&m.data[2*start], &dst[0], blocks)
	}
	if tail := blocks * lanes; tail < len(dst) {
		tensor.Float32(dt, m.data, start+tail, dst[tail:])
	}
	return true
}

type denseFn func(w *byte, x, out *float32, rows, blocks, rowBytes int)

// denseCall runs the vector kernel over whole vectors of each row and adds
// the tail in Go.
func denseCall(a dargs, lanes int, fns [3]denseFn) {
	if a.rows == 0 {
		return
	}
	esz := 4
	if a.dt != dtF32 {
		esz = 2
	}
	rowBytes := a.cols * esz
	if len(a.w) < a.rows*rowBytes || len(a.x) < a.cols || len(a.out) < a.rows {
		panic("cpu: dense kernel arguments do not fit the shape")
	}
	blocks := a.cols / lanes
	if blocks > 0 {
		fns[a.dt](&a.w[0], &a.x[0], &a.out[0], a.rows, blocks, rowBytes)
	} else {
		clear(a.out[:a.rows])
	}
	if tail := blocks * lanes; tail < a.cols {
		t := dargs{dt: a.dt, x: a.x[tail:a.cols], cols: a.cols - tail, rows: 1}
		var one [1]float32
		for r := 0; r < a.rows; r++ {
			t.w = a.w[r*rowBytes+tail*esz : (r+1)*rowBytes]
			t.out = one[:]
			denseGo(t)
			a.out[r] += one[0]
		}
	}
}

func dotCall(a, b []float32, lanes int, fn func(a, b *float32, blocks int) float32) float32 {
	n := len(a)
	b = b[:n]
	blocks := n / lanes
	var s float32
	if blocks > 0 {
		s = fn(&a[0], &b[0], blocks)
	}
	for i := blocks * lanes; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

func axpyCall(alpha float32, x, y []float32, lanes int, fn func(alpha float32, x, y *float32, blocks int)) {
	n := len(x)
	y = y[:n]
	blocks := n / lanes
	if blocks > 0 {
		fn(alpha, &x[0], &y[0], blocks)
	}
	for i := blocks * lanes; i < n; i++ {
		y[i] += alpha * x[i]
	}
}

// expSumCall runs the vector kernel over whole vectors and exp32 over the
// tail.
func expSumCall(x []float32, mx float32, lanes int, fn func(x *float32, blocks int, mx float32) float32) float32 {
	blocks := len(x) / lanes
	var s float32
	if blocks > 0 {
		s = fn(&x[0], blocks, mx)
	}
	return s + expSumGo(x[blocks*lanes:], mx)
}

// siluCall runs the vector SiLU over whole vectors and Go over the tail.
func siluCall(x, out []float32, lanes int, fn func(x, out *float32, blocks int)) {
	out = out[:len(x)]
	blocks := len(x) / lanes
	if blocks > 0 {
		fn(&x[0], &out[0], blocks)
	}
	for i := blocks * lanes; i < len(x); i++ {
		out[i] = x[i] / (1 + exp32(-x[i]))
	}
}

//go:noescape
func siluAVX512(x, out *float32, blocks int)

//go:noescape
func siluAVX2(x, out *float32, blocks int)

//go:noescape
func expSumAVX512(x *float32, blocks int, mx float32) float32

//go:noescape
func expSumAVX2(x *float32, blocks int, mx float32) float32

//go:noescape
func q4BF16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)

//go:noescape
func q4F16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)

//go:noescape
func q8BF16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)

//go:noescape
func q8F16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)

//go:noescape
func q4BF16AVX2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)

//go:noescape
func q4F16AVX2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)

//go:noescape
func q8BF16AVX2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)

//go:noescape
func q8F16AVX2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks int)

//go:noescape
func q4W32BF16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters int)

//go:noescape
func q4W64BF16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters int)

//go:noescape
func q4W128BF16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters int)

//go:noescape
func q4W32F16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters int)

//go:noescape
func q4W64F16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters int)

//go:noescape
func q4W128F16AVX512(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters int)

//go:noescape
func q4W32BF16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W64BF16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W128BF16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W32F16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W64F16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W128F16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W32BF16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W64BF16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W128BF16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W32F16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W64F16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4W128F16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, iters, xstride, sumstride, outstride int)

//go:noescape
func q4BF16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q4F16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q8BF16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q8F16AVX512x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q4BF16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q4F16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q8BF16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q8F16AVX512x4(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q4BF16AVX2x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q4F16AVX2x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q8BF16AVX2x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q8F16AVX2x2(w *byte, scales, biases *uint16, x, xsum, out *float32, rows, groups, blocks, xstride, sumstride, outstride int)

//go:noescape
func q4I8G32BF16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8G64BF16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8G128BF16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8G32F16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8G64F16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8G128F16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8H32BF16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8H64BF16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8H32F16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8H64F16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func quantizeI8AVX512(x *float32, xq8, xq4 *int8, dv8, dv4 *float32, chunks, perChunk int)

//go:noescape
func q4I8H32BF16AVX2(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8H64BF16AVX2(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8H32F16AVX2(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q4I8H64F16AVX2(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q8I8G32BF16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q8I8G64BF16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q8I8G32F16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func q8I8G64F16(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

//go:noescape
func deq4BF16AVX512(w *byte, scales, biases *uint16, out *float32, groups, blocks int)

//go:noescape
func deq4F16AVX512(w *byte, scales, biases *uint16, out *float32, groups, blocks int)

//go:noescape
func deq8BF16AVX512(w *byte, scales, biases *uint16, out *float32, groups, blocks int)

//go:noescape
func deq8F16AVX512(w *byte, scales, biases *uint16, out *float32, groups, blocks int)

//go:noescape
func deq4BF16AVX2(w *byte, scales, biases *uint16, out *float32, groups, blocks int)

//go:noescape
func deq4F16AVX2(w *byte, scales, biases *uint16, out *float32, groups, blocks int)

//go:noescape
func deq8BF16AVX2(w *byte, scales, biases *uint16, out *float32, groups, blocks int)

//go:noescape
func deq8F16AVX2(w *byte, scales, biases *uint16, out *float32, groups, blocks int)

//go:noescape
func widenBF16AVX512(src *byte, dst *float32, blocks int)

//go:noescape
func widenF16AVX512(src *byte, dst *float32, blocks int)

//go:noescape
func widenBF16AVX2(src *byte, dst *float32, blocks int)

//go:noescape
func widenF16AVX2(src *byte, dst *float32, blocks int)

//go:noescape
func denseF32AVX512(w *byte, x, out *float32, rows, blocks, rowBytes int)

//go:noescape
func denseBF16AVX512(w *byte, x, out *float32, rows, blocks, rowBytes int)

//go:noescape
func denseF16AVX512(w *byte, x, out *float32, rows, blocks, rowBytes int)

//go:noescape
func denseF32AVX2(w *byte, x, out *float32, rows, blocks, rowBytes int)

//go:noescape
func denseBF16AVX2(w *byte, x, out *float32, rows, blocks, rowBytes int)

//go:noescape
func denseF16AVX2(w *byte, x, out *float32, rows, blocks, rowBytes int)

//go:noescape
func dotAVX512(a, b *float32, blocks int) float32

//go:noescape
func dotAVX2(a, b *float32, blocks int) float32

//go:noescape
func axpyAVX512(alpha float32, x, y *float32, blocks int)

//go:noescape
func axpyAVX2(alpha float32, x, y *float32, blocks int)

//go:noescape
func gemmAVX512(kc int, a *float32, lda int, b, c *float32, ldc int, accumulate bool)

//go:noescape
func gemmAVX2(kc int, a *float32, lda int, b, c *float32, ldc int, accumulate bool)

//go:noescape
func gemmI8VNNI(blocks, steps int, w *byte, sc, bi *float32, x *int8, d, xs, c *float32, accumulate bool)

//go:noescape
func gemmI8AVX2(blocks, steps int, w *byte, sc, bi *float32, x *int8, d, xs, c *float32, accumulate bool)

// gemmI8VNNIKernelOrNil is gemmI8VNNIKernel (nil off amd64), for the tests.
func gemmI8VNNIKernelOrNil() func(blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool) {
	return gemmI8VNNIKernel
}

// avx2KernelsOrNil is the avx2 set (nil off amd64), for the benchmarks.
func avx2KernelsOrNil() *kernels { return avx2Kernels }
