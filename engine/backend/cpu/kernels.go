package cpu

import (
	"fmt"
	"strings"
	"unsafe"
)

// kernels is one set of inner loops. The backend picks a set once, at New:
// the fastest one the CPU runs (KernelSets), or the one Options.Kernels
// names, so tests run every set this machine can and the pure-Go set is
// always among them.
type kernels struct {
	name string

	// q4 and q8 compute rows [0, rows) of a quantized matrix–vector
	// product from a prepared input (mvTask): out[r] = Σ_g s[r,g]·
	// Σ_{i∈g} q[r,i]·x[i] + b[r,g]·Σ_{i∈g} x[i]. nil means the generic
	// loop. They take bf16 or f16 scales; f32 scales use the generic loop.
	q4 func(a qargs)
	q8 func(a qargs)
	// qrows is q4 (bits 4) or q8 (bits 8) for a.inputs input rows at
	// once (each weight block unpacked once for all of them), bit for bit
	// what q4 or q8 gives one row at a time; it reports false, having done
	// nothing, where the set has no such kernel for a's shape or input
	// count. nil: none at all.
	qrows func(a qargs, bits int) bool
	// perm is the block the q4 kernel wants x permuted in: within each
	// block of perm elements, the even-indexed elements come first, then
	// the odd ones (the order of low and high nibbles after a byte-to-lane
	// widening). 0 means no permutation.
	perm int

	// dense computes out[r] = w[r]·x for rows [0, rows) of a dense F32,
	// F16 or BF16 matrix.
	dense func(a dargs)

	// gemm is the register-blocked microkernel: C[mr×nr] (+)= A·B with A
	// mr rows of kc floats (row stride lda: dequantized weight rows) and B
	// packed as [kc][nr] (transposed activations); C has row stride ldc.
	mr, nr int
	gemm   func(kc int, a []float32, lda int, b, c []float32, ldc int, accumulate bool)

	// gemmI8 is the int8-activation GEMM microkernel (gemm_i8.go): C
	// [i8mr tokens × i8nr weight rows] (+)= blocks activation blocks of
	// steps 4-element steps. nil: prefill stays on the float GEMM even
	// with Int8Activations. i8steps is the most steps a block may have
	// (AVX2's 16-bit sums hold 8); i8gemm8 says it takes 8-bit weights.
	i8mr, i8nr int
	i8steps    int
	i8gemm8    bool
	gemmI8     func(blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool)

	// i8 holds the int8-activation kernels (Options.Int8Activations),
	// by weight bits, group size and f16 scales; nil without them.
	i8 map[i8key]i8fn
	// i8half: the set's 4-bit int8 kernels all take 64-element chunks
	i8half bool
	// quantI8 quantizes one input row for the int8 kernels (xq8, xq4 in
	// chunks of c4, dv8, dv4), as mvTask.quantizeInput does; nil: Go.
	quantI8 func(x []float32, xq8, xq4 []int8, dv8, dv4 []float32, c4 int)

	dot  func(a, b []float32) float32
	axpy func(alpha float32, x, y []float32) // y += alpha·x
	// deq dequantizes elements [k0, k0+len(dst)) of row r of a quantized
	// m into dst, exactly as decodeSeg does, and reports whether it could
	// (nil or false: use decodeSeg).
	deq func(m *mat, r, k0 int, dst []float32) bool
	// expSum sets x[i] = exp(x[i] - mx) (exp32's algorithm) and returns
	// the sum of the results.
	expSum func(x []float32, mx float32) float32
	// silu sets out[i] = x[i]/(1+exp32(-x[i])); nil: the Go loop.
	silu func(x, out []float32)
}

// qargs are the arguments of a quantized matrix–vector kernel. Rows are
// contiguous: row r's packed bits start at w[r*rowBytes], its scales and
// biases at element r*groups.
type qargs struct {
	w              []byte
	scales, biases []byte // 2 bytes per group (bf16, or f16 when f16 is set)
	f16            bool
	x, xsum        []float32 // prepared input, per-group sums of x
	out            []float32
	rows, groups   int
	group          int
	// inputs (qrows only) is how many input rows x holds, xstride and
	// ostride elements apart in x and out (and groups apart in xsum).
	inputs           int
	xstride, ostride int
}

// i8key picks an int8-activation kernel. half marks the 4-bit kernels
// that take rows in 64-element chunks (rows whose length is not a multiple
// of 128).
type i8key struct {
	bits, group int
	f16, half   bool
}

type i8fn func(w *byte, scales, biases *uint16, xq *int8, dv, xsum, out *float32, rows, chunks int)

// i8args are the arguments of an int8-activation kernel: the input
// quantized per block of 32 (xq, permuted for 4-bit weights), its block
// scales expanded per dword lane (dv, 16 per chunk, or 8 per half chunk),
// and the exact float sums of each group (xsum, 4 spare entries at the
// end).
type i8args struct {
	w              []byte
	scales, biases []byte
	xq             []int8
	dv, xsum, out  []float32
	rows, chunks   int
	bits, group    int
	half           bool // 4-bit in 64-element chunks
}

// dargs are the arguments of a dense matrix–vector kernel.
type dargs struct {
	w    []byte // rows contiguous, cols elements each
	dt   int    // dtF32, dtF16 or dtBF16
	x    []float32
	out  []float32
	rows int
	cols int
}

const (
	dtF32 = iota
	dtF16
	dtBF16
)

// KernelSets lists the kernel sets this CPU runs, fastest first. The last
// is always "generic" (pure Go).
func KernelSets() []string {
	var out []string
	for _, k := range available() {
		out = append(out, k.name)
	}
	return out
}

func kernelsNamed(name string) (*kernels, error) {
	sets := available()
	if name == "" {
		return sets[0], nil
	}
	for _, k := range sets {
		if k.name == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("kernel set %q does not run on this CPU (available: %s)", name, strings.Join(KernelSets(), ", "))
}

// generic is the pure-Go kernel set. It runs everywhere and is the
// baseline the benchmarks compare the others with.
var generic = &kernels{
	name: "generic",
	mr:   4, nr: 4,
	gemm:   gemmGo,
	dot:    dotGo,
	axpy:   axpyGo,
	dense:  denseGo,
	expSum: expSumGo,
}

// i8call checks the slices against the shape and runs an int8-activation
// kernel.
func i8call(fn i8fn, a i8args) {
	if a.rows == 0 {
		return
	}
	chunk := 128
	if a.bits == 8 || a.half {
		chunk = 64
	}
	cols := a.chunks * chunk
	groups := cols / a.group
	lanes := chunk / 8 // dv entries per chunk
	if len(a.w) != a.rows*cols*a.bits/8 || len(a.scales) < 2*a.rows*groups || len(a.biases) < 2*a.rows*groups ||
		len(a.xq) < cols || len(a.dv) < a.chunks*lanes || len(a.xsum) < groups+4 || len(a.out) < a.rows {
		panic("cpu: int8 kernel arguments do not fit the shape")
	}
	fn(&a.w[0], (*uint16)(unsafe.Pointer(&a.scales[0])), (*uint16)(unsafe.Pointer(&a.biases[0])),
		&a.xq[0], &a.dv[0], &a.xsum[0], &a.out[0], a.rows, a.chunks)
}
