// Package gpu is the WebGPU backend: every op of tensor.Ops() as a WGSL
// compute kernel, run through wgpu-native (github.com/cogentcore/webgpu),
// which drives Metal on macOS and Vulkan on Linux.
//
// Weights are copied once into device buffers in their stored form (F32,
// F16, BF16 or MLX-quantized words) and dequantized inside the kernels. A
// Run records the whole graph into one command encoder and one submission;
// node results live in pooled device buffers, and the plan (pipelines, bind
// groups, buffer assignment) is cached by the graph's structure, so a decode
// step that repeats the last step's shape only rewrites the small input and
// parameter buffers. Read maps only the requested output.
//
// docs/design/gpu.md describes the kernels, the fusions and the measurements.
package gpu

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"github.com/cogentcore/webgpu/wgpu"

	"hearth/engine/tensor"
)

// Options configure the backend.
type Options struct {
	// WeightBlockBytes caps the bytes of one weight binding; a larger
	// weight is split into row blocks. 0 means the adapter's binding limit.
	// Tests set it low to exercise the split path.
	WeightBlockBytes uint64
	// NoFusion runs every node as its own kernel (the conformance tests
	// compare both ways).
	NoFusion bool
	// MatVec overrides the shape of the matrix-vector kernel (rows per
	// thread, lanes per row); zero values pick the defaults. For tuning.
	MatVec MatVecShape
	// Attn overrides the attention kernel's load grouping. For tuning.
	Attn AttnShape
	// Gemm overrides the kernel of many-row MatMuls (prefill); zero
	// fields pick the defaults. For tuning and comparison.
	Gemm GemmShape
}

// AttnShape groups the attention kernel's loads; zero fields pick the
// defaults. Keys is how many keys' value rows one iteration of the value
// loop loads together (1–16; 16). Score is how many vec4s of a key row the
// scoring loads together (1, 2, 4, 8, 16 or 32; 8, lowered to divide the
// row).
type AttnShape struct {
	Keys, Score int
}

func (a AttnShape) withDefaults() AttnShape {
	return AttnShape{Keys: cmp.Or(a.Keys, 16), Score: cmp.Or(a.Score, 8)}
}

func (a AttnShape) check() error {
	if a.Keys < 1 || a.Keys > 16 || a.Score < 1 || a.Score > 32 || a.Score&(a.Score-1) != 0 {
		return fmt.Errorf("gpu: attention shape %+v (keys 1–16; score 1, 2, 4, 8, 16 or 32)", a)
	}
	return nil
}

// MatVecShape picks the matrix-vector kernel and its shape.
//
// The column kernel (one row of x, Cols > 0) gives each invocation of a
// workgroup its own 32-column blocks of every row, with x held in
// registers, and the workgroup Cols rows; Threads caps the workgroup size
// (64, 128 or 256). The row kernel (several rows of x, always; one row
// when Cols is 0) divides a workgroup of 256 invocations so that Lanes
// invocations share one output row's dot product, each carrying Rows rows.
//
// With one row of x the row kernel loads the weights of Batch block
// iterations (all its rows, and gate and up for the gated MLP) before
// their arithmetic, so that more loads are in flight; for wider weight
// kinds (dense, 8-bit) it lowers the batch so that at most 32 vec4 words
// of weights are held at once.
//
// Zero fields pick the defaults: the row kernel with 2 rows, lanes per
// matrix with at most 8 blocks each (16 lanes for a 4096-wide matrix, 64
// for the 14336-wide down projection), batch 1, the RMSNorm folded into
// kernels of up to 65536 rows (not into a 128256-row LM head). When no
// field but NormRows or Batch is set, that default is fitted to each
// matrix with one row of x (perMatrix: the column kernel for a down
// projection, more workgroups for o_proj, 4 rows for an LM head): the
// fastest measured on the H200 (docs/benchmarks.md). A shape given is
// used for every matrix.
type MatVecShape struct {
	Rows  int // 1, 2 or 4
	Lanes int // 8, 16, 32 or 64
	// Iters > 0 picks Lanes per matrix instead: the fewest of 16, 32
	// and 64 that leave each lane at most Iters blocks of a row
	Iters   int
	Batch   int // 1, 2, 4 or 8: row kernel block iterations per load batch
	Cols    int // 1 … 32, a power of two; 0: the row kernel
	Threads int // 64, 128 or 256
	// NormRows: a one-row RMSNorm is folded into the prologue only of the
	// kernels that compute at most NormRows output rows in all; past that
	// it runs as a kernel of its own. Every workgroup repeats the prologue,
	// so a kernel of thousands (an LM head) does better without it
	NormRows int
}

// Adapter describes the device a backend runs on.
type Adapter struct {
	Name    string // e.g. "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"
	Backend string // "vulkan", "metal", …
	Type    string // "discrete-gpu", "integrated-gpu", "cpu", "unknown"
	// Emulated is true for a software rasterizer that runs on the CPU
	// (Mesa's lavapipe, SwiftShader): correct but slower than the cpu
	// backend, so backend "auto" should not pick it.
	Emulated bool
}

// Backend runs graphs on a WebGPU device. It is not safe for concurrent
// use: one goroutine owns it, like every tensor.Backend.
type Backend struct {
	opt      Options
	inst     *wgpu.Instance
	adapter  *wgpu.Adapter
	dev      *wgpu.Device
	queue    *wgpu.Queue
	info     Adapter
	limits   wgpu.Limits
	maxBind  uint64 // bytes one storage binding may span
	maxBlock uint64 // bytes of one weight block
	mv       MatVecShape
	mvAuto   bool // mv is the default: fitted to each matrix (perMatrix)
	attn     AttnShape
	gemm     GemmShape

	bufs    []*buffer // by tensor.BufferT index; nil when free
	serial  uint64    // counts Upload/Alloc calls; a buffer's identity in plan keys
	pending uint64    // upload bytes not yet flushed to the device

	pipes   map[string]*wgpu.ComputePipeline
	layouts map[*wgpu.ComputePipeline]*wgpu.BindGroupLayout
	plans   map[string]*plan
	clock   uint64 // plan use counter, for evicting the least recently used

	counters   *buffer   // zeroed counts of cross-workgroup reductions (counterBuf)
	pool       pool      // node results, the inputs buffer, params, readback
	last       *pending  // the last Run, whose outputs Read serves
	stamp      *profiler // nil unless SetProfile(true)
	timestamps bool      // the device has timestamp queries
	skip       fusion    // fusions turned off (tests isolate one at a time)
	times      RunTimes  // host time of the last Run
}

// fusion is a set of fusion kinds.
type fusion uint8

const (
	fuseDual fusion = 1 << iota
	fuseEpilogue
	fuseGroup
	fuseRMS
	fuseStore
	fuseRope
	fuseRopeMV // a one-token RoPE into the matrix-vector kernel before it
)

// Probe reports the adapter New would pick, without making a device.
func Probe() (Adapter, error) {
	inst := newInstance()
	defer inst.Release()
	a, err := pickAdapter(inst)
	if err != nil {
		return Adapter{}, err
	}
	defer a.Release()
	return describe(a), nil
}

// pickAdapter prefers a discrete GPU, then an integrated one, then anything
// else, then a CPU emulation.
func pickAdapter(inst *wgpu.Instance) (*wgpu.Adapter, error) {
	all := inst.EnumerateAdapters(&wgpu.InstanceEnumerateAdapterOptons{Backends: instanceBackends})
	if len(all) == 0 {
		return nil, errors.New("no Vulkan or Metal adapter found (on Linux: apt-get install mesa-vulkan-drivers libvulkan1, or a GPU driver)")
	}
	rank := map[wgpu.AdapterType]int{wgpu.AdapterTypeDiscreteGPU: 0, wgpu.AdapterTypeIntegratedGPU: 1, wgpu.AdapterTypeUnknown: 2, wgpu.AdapterTypeCPU: 3}
	sort.SliceStable(all, func(i, j int) bool {
		return rank[all[i].GetInfo().AdapterType] < rank[all[j].GetInfo().AdapterType]
	})
	for _, a := range all[1:] {
		a.Release()
	}
	return all[0], nil
}

func describe(a *wgpu.Adapter) Adapter {
	in := a.GetInfo()
	return Adapter{
		// This wgpu-native puts the adapter's name in the description and
		// the PCI device id, as hex, in the name.
		Name:     cmp.Or(in.DriverDescription, in.Name),
		Backend:  in.BackendType.String(),
		Type:     in.AdapterType.String(),
		Emulated: in.AdapterType == wgpu.AdapterTypeCPU,
	}
}

// maxWeightBlock is WebGPU's default maxBufferSize, which every device
// allows.
const maxWeightBlock = 256 << 20

// New opens the best adapter (see Probe) and makes a device on it. It
// fails when there is none; it does not refuse an emulated adapter (tests
// run on lavapipe), so callers choosing automatically check Adapter().Emulated.
func New(opt Options) (*Backend, error) {
	inst := newInstance()
	a, err := pickAdapter(inst)
	if err != nil {
		inst.Release()
		return nil, fmt.Errorf("gpu: %w", err)
	}
	have := a.GetLimits().Limits
	// Start from the defaults and raise only what the kernels need; asking
	// for the adapter's own limits wholesale is refused.
	want := wgpu.DefaultLimits()
	want.MaxBufferSize = have.MaxBufferSize
	want.MaxStorageBufferBindingSize = min(have.MaxStorageBufferBindingSize, have.MaxBufferSize)
	want.MaxStorageBuffersPerShaderStage = min(have.MaxStorageBuffersPerShaderStage, 16)
	want.MaxComputeWorkgroupStorageSize = min(have.MaxComputeWorkgroupStorageSize, 32768)
	var features []wgpu.FeatureName
	if a.HasFeature(wgpu.FeatureNameTimestampQuery) {
		features = append(features, wgpu.FeatureNameTimestampQuery)
	}
	dev, err := a.RequestDevice(&wgpu.DeviceDescriptor{
		Label:            "hearth",
		RequiredFeatures: features,
		RequiredLimits:   &wgpu.RequiredLimits{Limits: want},
	})
	if err != nil {
		a.Release()
		inst.Release()
		return nil, fmt.Errorf("gpu: request device on %q (limits %d-byte bindings, %d storage buffers, %d bytes of workgroup memory): %w",
			describe(a).Name, want.MaxStorageBufferBindingSize, want.MaxStorageBuffersPerShaderStage, want.MaxComputeWorkgroupStorageSize, err)
	}
	b := &Backend{
		opt: opt, inst: inst, adapter: a, dev: dev, queue: dev.GetQueue(), info: describe(a),
		limits:  dev.GetLimits().Limits,
		pipes:   map[string]*wgpu.ComputePipeline{},
		layouts: map[*wgpu.ComputePipeline]*wgpu.BindGroupLayout{},
		plans:   map[string]*plan{},
	}
	if b.limits.MaxStorageBuffersPerShaderStage < 8 || b.limits.MaxComputeWorkgroupStorageSize < minWorkgroupBytes {
		b.Close()
		return nil, fmt.Errorf("gpu: adapter %q allows %d storage buffers and %d bytes of workgroup memory per kernel (need 8 and %d)",
			b.info.Name, b.limits.MaxStorageBuffersPerShaderStage, b.limits.MaxComputeWorkgroupStorageSize, minWorkgroupBytes)
	}
	b.maxBind = b.limits.MaxStorageBufferBindingSize &^ 255
	// A weight is cut into blocks of at most maxWeightBlock bytes whatever
	// the device reports: on the H200's Vulkan driver a 335 MB embedding
	// table (Gemma 3 and 4, Qwen 3.5: 262k and 248k vocabularies at 4 bits)
	// was refused as over a 256 MiB buffer size while the binding limit
	// read back larger.
	b.maxBlock = min(b.maxBind, maxWeightBlock)
	if opt.WeightBlockBytes > 0 {
		b.maxBlock = min(b.maxBind, opt.WeightBlockBytes)
	}
	b.mv, b.mvAuto = opt.MatVec.withDefaults(), opt.MatVec.isDefault()
	b.attn = opt.Attn.withDefaults()
	if err := checkShape(b.mv, opt.MatVec); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.attn.check(); err != nil {
		b.Close()
		return nil, err
	}
	if b.gemm = opt.Gemm.withDefaults(); b.gemm.check() != nil {
		b.Close()
		return nil, b.gemm.check()
	}
	b.timestamps = len(features) > 0
	return b, nil
}

// SetProfile turns per-kernel timing on or off. While on, every kernel runs
// in its own compute pass between timestamp queries (slower), and
// LastProfile says where the device time of the last Run went.
func (b *Backend) SetProfile(on bool) error {
	switch {
	case on && !b.timestamps:
		return fmt.Errorf("gpu: adapter %q has no timestamp queries", b.info.Name)
	case on && b.stamp == nil:
		b.stamp = newProfiler(b)
	case !on && b.stamp != nil:
		b.stamp.release()
		b.stamp = nil
	}
	return nil
}

// SetMatVec changes the matrix-vector kernel's shape (for tuning; zero
// fields pick the defaults); cached plans are dropped.
func (b *Backend) SetMatVec(s MatVecShape) error {
	if err := checkShape(s.withDefaults(), s); err != nil {
		return err
	}
	b.mv, b.mvAuto = s.withDefaults(), s.isDefault()
	b.dropPlans()
	return nil
}

// SetAttention changes the attention kernel's load grouping (for tuning;
// zero fields pick the defaults); cached plans are dropped.
func (b *Backend) SetAttention(a AttnShape) error {
	a = a.withDefaults()
	if err := a.check(); err != nil {
		return err
	}
	b.attn = a
	b.dropPlans()
	return nil
}

func (b *Backend) dropPlans() {
	for k, p := range b.plans {
		p.release()
		delete(b.plans, k)
	}
	b.last = nil
}

// headRows is how many output rows make a matrix-vector kernel an LM
// head's for its defaults: no folded RMSNorm (NormRows), 4 rows an
// invocation (perMatrix).
const headRows = 65536

// isDefault reports whether s names no kernel shape (NormRows and Batch,
// which is when loads are issued, aside), so that each matrix gets the
// default fitted to it.
func (s MatVecShape) isDefault() bool {
	s.NormRows, s.Batch = 0, 0
	return s == MatVecShape{}
}

// withDefaults fills the zero fields of s with the default shape.
func (s MatVecShape) withDefaults() MatVecShape {
	if s.Threads == 0 {
		s.Threads = 256
	}
	if s.Rows == 0 {
		s.Rows = 2
	}
	if s.Lanes == 0 && s.Iters == 0 {
		s.Iters = 8
	}
	if s.Lanes == 0 {
		s.Lanes = 16
	}
	if s.Batch == 0 {
		s.Batch = 1
	}
	if s.NormRows == 0 {
		s.NormRows = headRows
	}
	return s
}

// ParseMatVecShape reads a shape as the benchmarks' flags write it: RxL
// (the row kernel, rows × lanes), RxiN (the row kernel, lanes per matrix
// leaving at most N blocks each), either with bB after it (a load batch
// of B) and then nN (NormRows N), or cRxT (the column kernel, rows per
// workgroup × most invocations); and checks it. Every such form names a
// shape, so the matrices no longer get perMatrix's; bB, nN or bBnN alone
// keeps them and changes only Batch and NormRows.
func ParseMatVecShape(f string) (MatVecShape, error) {
	var sh MatVecShape
	bad := fmt.Errorf("gpu: matvec shape %q: want RxL or RxiN, either with bB and then nN after it, cRxT, or bB, nN or both alone (the default shapes); rows 1, 2 or 4; lanes 8–64; batch 1–8; cols up to 32; threads 64–256 (powers of two)", f)
	num := func(s string) int {
		n, err := strconv.Atoi(s)
		if err != nil {
			return -1
		}
		return n
	}
	if m := batchNorm.FindStringSubmatch(f); m != nil && f != "" {
		// the default shapes (perMatrix) with another load batch or norm
		// row limit
		if m[1] != "" {
			sh.Batch = num(m[1])
		}
		if m[2] != "" {
			sh.NormRows = num(m[2])
		}
	} else if m := colShape.FindStringSubmatch(f); m != nil {
		sh.Cols, sh.Threads = num(m[1]), num(m[2])
	} else if m := rowShape.FindStringSubmatch(f); m != nil {
		sh.Rows = num(m[1])
		if m[2] == "i" {
			sh.Iters = num(m[3])
		} else {
			sh.Lanes = num(m[3])
		}
		if m[4] != "" {
			sh.Batch = num(m[4])
		}
		if m[5] != "" {
			sh.NormRows = num(m[5])
		}
	} else {
		return MatVecShape{}, bad
	}
	if checkShape(sh.withDefaults(), sh) != nil {
		return MatVecShape{}, bad
	}
	return sh, nil
}

var (
	colShape  = regexp.MustCompile(`^c(\d+)x(\d+)$`)
	batchNorm = regexp.MustCompile(`^(?:b(\d+))?(?:n(\d+))?$`)
	rowShape  = regexp.MustCompile(`^(\d+)x(i?)(\d+)(?:b(\d+))?(?:n(\d+))?$`)
)

// checkShape reports whether s (with defaults filled) is a shape the
// matrix-vector kernels take; the error shows asked, as given.
func checkShape(s, asked MatVecShape) error {
	pow2 := func(v, hi int) bool { return v > 0 && v <= hi && v&(v-1) == 0 }
	if pow2(s.Rows, 4) && pow2(s.Lanes, 64) && s.Lanes >= 8 && pow2(s.Batch, 8) &&
		(s.Cols == 0 || pow2(s.Cols, 32)) && pow2(s.Threads, 256) && s.Threads >= 64 && s.Iters >= 0 && s.NormRows >= 0 {
		return nil
	}
	return fmt.Errorf("gpu: matvec shape %+v (rows 1, 2 or 4; lanes 8, 16, 32 or 64; iters 0 or more; norm rows 0 or more; batch 1, 2, 4 or 8; cols 0 or a power of two up to 32; threads 64, 128 or 256)", asked)
}

// Name is "gpu".
func (b *Backend) Name() string { return "gpu" }

// Adapter describes the device the backend runs on.
func (b *Backend) Adapter() Adapter { return b.info }

// minWorkgroupBytes is the most workgroup memory a fixed-size kernel
// declares: gemm.wgsl's two 32×65 float tiles (padded against bank
// conflicts), 256 bytes over WebGPU's 16 KiB default. Kernels sized at
// compile time (matvec, the MoE kernels) fit themselves to the limit.
const minWorkgroupBytes = 2 * 32 * 65 * 4

// CopiesUploads reports that Upload copies each weight into a device
// buffer and keeps no reference to the caller's bytes (tensor.UploadCopier).
func (b *Backend) CopiesUploads() bool { return true }

// Close frees every device object the backend holds, once the device has
// finished what was submitted (wgpu's own wait on release would give up
// after 5 s and free objects still in use: wait.go).
func (b *Backend) Close() error {
	if b.dev != nil && b.queue != nil {
		b.waitIdle()
	}
	for _, p := range b.plans {
		p.release()
	}
	b.plans = nil
	for i, buf := range b.bufs {
		if buf != nil {
			buf.release()
			b.bufs[i] = nil
		}
	}
	if b.counters != nil {
		b.counters.release()
		b.counters = nil
	}
	b.pool.release()
	for _, l := range b.layouts {
		l.Release()
	}
	b.layouts = nil
	for _, p := range b.pipes {
		p.Release()
	}
	b.pipes = nil
	if b.stamp != nil {
		b.stamp.release()
		b.stamp = nil
	}
	if b.queue != nil {
		b.queue.Release()
		b.queue = nil
	}
	if b.dev != nil {
		b.dev.Release()
		b.dev = nil
	}
	if b.adapter != nil {
		b.adapter.Release()
		b.adapter = nil
	}
	if b.inst != nil {
		b.inst.Release()
		b.inst = nil
	}
	return nil
}

// Backend is a tensor.Backend with every optional interface.
var (
	_ tensor.Backend         = (*Backend)(nil)
	_ tensor.UploadCopier    = (*Backend)(nil)
	_ tensor.Pipeliner       = (*Backend)(nil)
	_ tensor.Profiler        = (*Backend)(nil)
	_ tensor.BandwidthReader = (*Backend)(nil)
)
