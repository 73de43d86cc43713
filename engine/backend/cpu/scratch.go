package cpu

// scratch is the backend's reusable working memory. Every buffer grows to
// the largest size a run asked for and is then reused, so steady-state runs
// (every decode step after the first) allocate nothing.
type scratch struct {
	xp, xsum, xt []float32
	xq4, xq8     []int8
	dv4, dv8     []float32
	// int8 GEMM: the quantized input panels, block scales and sums
	gq     []uint32
	gd, gs []float32
	// ExpertMatMul: per-expert counts and fill cursors, (token, slot)
	// pairs bucketed by expert, gathered inputs and outputs
	moeCount, moeFill, moePairs, moeIDs []int
	moeX, moeY                          []float32
	workers                             []workerScratch
}

// workerScratch is one worker's private memory.
type workerScratch struct {
	tile, strip []float32 // GEMM
	i8tile      []uint32  // int8 GEMM: a weight tile's levels
	i8sc, i8bi  []float32 // int8 GEMM: the tile's scales and biases per block
	scores      []float32 // attention
	kvrow       []float32 // attention: a quantized key or value row, dequantized
	kvblk       []float32 // blocked attention: a block's quantized values, dequantized
	kvstats     []float32 // attention over a quantized cache: per-head max and 1/sum
	rope        []float32 // RoPE's cos and sin
	aq, akt, as []float32 // blocked attention: Q, Kᵀ panels, scores
	avp, ao     []float32 // blocked attention: V panels, output
	_           [64]byte  // keep workers' headers on separate cache lines
}

func (s *scratch) worker(w int) *workerScratch { return &s.workers[w] }

// grow returns (*s)[:n], reallocating (64-byte aligned) when the capacity
// is short.
func grow(s *[]float32, n int) []float32 {
	if cap(*s) < n {
		*s = alignedFloats(n + n/4)
	}
	return (*s)[:n]
}

// growI8 is grow for int8 slices.
func growI8(s *[]int8, n int) []int8 {
	if cap(*s) < n {
		*s = make([]int8, n+n/4)
	}
	return (*s)[:n]
}

// tasks holds the loop bodies the backend dispatches to its pool, one of
// each kind, so dispatching allocates nothing.
type tasks struct {
	mv        mvTask
	gemm      gemmTask
	packX     packXTask
	gemmI8    gemmI8Task
	quantX    quantXTask
	attn      attnTask
	attnBlock attnBlockTask
	ew        ewTask
	nodeMats  [maxFused]mat
	moeMat    [1]*mat
	moeOut    [1][]float32
}
