package gpu

import (
	"fmt"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"

	"hearth/engine/tensor"
)

// kind is how a buffer's elements are stored on the device.
type kind struct {
	dt    tensor.DType // F32, F16 or BF16; U32 when quantized
	bits  int          // quantized: bits per element
	group int          // quantized: elements per scale/bias group
	sdt   tensor.DType // quantized: scale and bias dtype
}

var f32Kind = kind{dt: tensor.F32}

func (k kind) quantized() bool { return k.bits > 0 }

func (k kind) String() string {
	if k.quantized() {
		return fmt.Sprintf("q%dg%d%s", k.bits, k.group, k.sdt)
	}
	return k.dt.String()
}

// buffer is an uploaded weight or an Alloc'd float32 buffer. A weight too
// large for one binding is split into row blocks.
type buffer struct {
	serial uint64
	name   string
	shape  []int
	kind   kind
	alloc  bool // a persistent float32 buffer (KV cache), readable
	blocks []block
	kv     tensor.KVType // a quantized KV buffer (AllocKV): not float data
	kvSoff uint32        // quantized: word offset of the scales
}

// block is rows [row0, row0+rows) of a buffer.
type block struct {
	row0, rows int
	data       *wgpu.Buffer
	sb         *wgpu.Buffer // quantized: (scale, bias) per group, packed
	dataSize   uint64
	sbSize     uint64
}

func (b *buffer) release() {
	for _, bl := range b.blocks {
		bl.data.Destroy()
		bl.data.Release()
		if bl.sb != nil {
			bl.sb.Destroy()
			bl.sb.Release()
		}
	}
	b.blocks = nil
}

// cols is the length of the last axis.
func (b *buffer) cols() int {
	if len(b.shape) == 0 {
		return 1
	}
	return b.shape[len(b.shape)-1]
}

const storageUsage = wgpu.BufferUsageStorage | wgpu.BufferUsageCopyDst | wgpu.BufferUsageCopySrc

// flushBytes is how many uploaded bytes may wait in staging memory before
// Upload makes the device take them, so loading a model never holds a
// second copy of it in host memory.
const flushBytes = 256 << 20

// Upload copies w into device memory in its stored form. The host copy is
// not kept: once Upload returns (and the staging copy is flushed) the
// caller's bytes may be unmapped.
func (b *Backend) Upload(w tensor.Weight) (tensor.T, error) {
	k, err := weightKind(w)
	if err != nil {
		return tensor.T{}, fmt.Errorf("upload %q: %w", w.Name, err)
	}
	rows, cols := 1, 1
	if n := len(w.Shape); n > 0 {
		cols = w.Shape[n-1]
		rows = tensor.Elements(w.Shape[:n-1])
	}
	rowBytes := uint64(cols * w.DType.Size())
	if k.quantized() {
		rowBytes = uint64(cols * k.bits / 8)
	}
	// Dense weights whose rows do not start on a word cannot be split.
	perBlock := rows
	if total := rowBytes * uint64(rows); total > b.maxBlock {
		perBlock = int(b.maxBlock / rowBytes)
		if !k.quantized() && w.DType != tensor.F32 && cols%2 != 0 {
			perBlock = 0
		}
		if perBlock == 0 {
			return tensor.T{}, fmt.Errorf("upload %q: %d bytes exceed the %d-byte binding limit and cannot be split by rows", w.Name, total, b.maxBlock)
		}
	}
	buf := &buffer{name: w.Name, shape: append([]int(nil), w.Shape...), kind: k}
	for r0 := 0; r0 < rows; r0 += perBlock {
		n := min(perBlock, rows-r0)
		bl := block{row0: r0, rows: n}
		data := w.Data[uint64(r0)*rowBytes : uint64(r0+n)*rowBytes]
		if bl.data, bl.dataSize, err = b.newBuffer(w.Name, uint64(len(data)), func(dst []byte) { copy(dst, data) }); err != nil {
			buf.release()
			return tensor.T{}, fmt.Errorf("upload %q: %w", w.Name, err)
		}
		if k.quantized() {
			groups := cols / k.group
			g0, g1 := r0*groups, (r0+n)*groups
			ssz := k.sdt.Size()
			sc, bi := w.Scales[g0*ssz:g1*ssz], w.Biases[g0*ssz:g1*ssz]
			words := 1
			if k.sdt == tensor.F32 {
				words = 2
			}
			bl.sb, bl.sbSize, err = b.newBuffer(w.Name+".sb", uint64((g1-g0)*words*4), func(dst []byte) { packScaleBias(dst, sc, bi, ssz) })
			if err != nil {
				bl.data.Release()
				buf.release()
				return tensor.T{}, fmt.Errorf("upload %q: %w", w.Name, err)
			}
		}
		buf.blocks = append(buf.blocks, bl)
	}
	b.pending += uint64(w.Bytes())
	if b.pending >= flushBytes {
		b.flush()
	}
	return b.push(buf), nil
}

// packScaleBias interleaves scales and biases: for 2-byte dtypes one word
// per group (scale in the low half, bias in the high half); for F32 two.
func packScaleBias(dst, scales, biases []byte, size int) {
	groups := len(scales) / size
	for g := 0; g < groups; g++ {
		if size == 2 {
			copy(dst[g*4:], scales[g*2:g*2+2])
			copy(dst[g*4+2:], biases[g*2:g*2+2])
		} else {
			copy(dst[g*8:], scales[g*4:g*4+4])
			copy(dst[g*8+4:], biases[g*4:g*4+4])
		}
	}
}

func weightKind(w tensor.Weight) (kind, error) {
	if w.Quantized() {
		q := w.Quant
		if q.Bits < 2 || q.Bits > 8 || q.Bits == 7 {
			return kind{}, fmt.Errorf("%d-bit quantization is not supported (2, 3, 4, 5, 6 and 8 are)", q.Bits)
		}
		if len(w.Shape) != 2 && len(w.Shape) != 3 {
			return kind{}, fmt.Errorf("quantized weight of shape %v, want 2-D (or 3-D stacked experts)", w.Shape)
		}
		if cols := w.Shape[len(w.Shape)-1]; q.GroupSize <= 0 || q.GroupSize%32 != 0 && q.GroupSize != 16 || cols%q.GroupSize != 0 {
			return kind{}, fmt.Errorf("group size %d with %d columns (the gpu backend needs 16 or a multiple of 32 that divides the columns)", q.GroupSize, cols)
		}
		sdt := w.ScaleDType
		if sdt != tensor.F32 && sdt != tensor.F16 && sdt != tensor.BF16 {
			return kind{}, fmt.Errorf("scale dtype %v (F32, F16 or BF16)", sdt)
		}
		groups := tensor.Elements(w.Shape) / q.GroupSize
		if len(w.Data) != tensor.Elements(w.Shape)*q.Bits/8 || len(w.Scales) != groups*sdt.Size() || len(w.Biases) != groups*sdt.Size() {
			return kind{}, fmt.Errorf("%d data, %d scale and %d bias bytes for %d-bit %v", len(w.Data), len(w.Scales), len(w.Biases), q.Bits, w.Shape)
		}
		return kind{dt: tensor.U32, bits: q.Bits, group: q.GroupSize, sdt: sdt}, nil
	}
	switch w.DType {
	case tensor.F32, tensor.F16, tensor.BF16:
		if len(w.Data) != tensor.Elements(w.Shape)*w.DType.Size() {
			return kind{}, fmt.Errorf("%d bytes for %v %v", len(w.Data), w.DType, w.Shape)
		}
		return kind{dt: w.DType}, nil
	}
	return kind{}, fmt.Errorf("dtype %v is not a weight type (F32, F16, BF16 or MLX-quantized U32)", w.DType)
}

// newBuffer makes a storage buffer of at least size bytes (rounded up to 16)
// and fills it through a mapping, so the data is copied once.
func (b *Backend) newBuffer(label string, size uint64, fill func([]byte)) (*wgpu.Buffer, uint64, error) {
	padded := max(16, (size+15)&^15)
	buf, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Size: padded, Usage: storageUsage, MappedAtCreation: fill != nil})
	if err != nil {
		return nil, 0, fmt.Errorf("allocate %d bytes of device memory: %w", padded, err)
	}
	if fill != nil {
		dst := buf.GetMappedRange(0, uint(padded))
		fill(dst[:size])
		clear(dst[size:])
		buf.Unmap()
	}
	return buf, padded, nil
}

// flush makes the device consume pending uploads, freeing staging memory.
func (b *Backend) flush() {
	b.queue.Submit()
	b.waitIdle()
	b.pending = 0
}

// Alloc makes a zeroed persistent float32 buffer.
func (b *Backend) Alloc(shape []int) (tensor.T, error) {
	n := tensor.Elements(shape)
	for _, d := range shape {
		if d < 0 {
			return tensor.T{}, fmt.Errorf("alloc: bad shape %v", shape)
		}
	}
	if uint64(n)*4 > b.maxBind {
		return tensor.T{}, fmt.Errorf("alloc %v: %d bytes exceed the adapter's %d-byte binding limit", shape, n*4, b.maxBind)
	}
	data, size, err := b.newBuffer("alloc", uint64(n)*4, func(dst []byte) { clear(dst) })
	if err != nil {
		return tensor.T{}, fmt.Errorf("alloc %v: %w", shape, err)
	}
	rows := 1
	if len(shape) > 0 {
		rows = shape[0]
	}
	buf := &buffer{name: "alloc", shape: append([]int(nil), shape...), kind: f32Kind, alloc: true,
		blocks: []block{{rows: rows, data: data, dataSize: size}}}
	return b.push(buf), nil
}

// maxCounters is how many counts counterBuf holds.
const maxCounters = 512

// counterBuf is the backend's buffer of maxCounters u32 counts, zero
// between dispatches: a kernel whose workgroups each do part of one
// result counts them there, and the last one to finish merges the parts
// and zeroes its count again (attention's splits). Dispatches run one
// after another, so one buffer serves every kernel.
func (b *Backend) counterBuf() (*buffer, error) {
	if b.counters == nil {
		data, size, err := b.newBuffer("counters", maxCounters*4, func(dst []byte) { clear(dst) })
		if err != nil {
			return nil, fmt.Errorf("counters: %w", err)
		}
		b.serial++
		b.counters = &buffer{serial: b.serial, name: "counters", shape: []int{maxCounters}, kind: kind{dt: tensor.U32}, alloc: true,
			blocks: []block{{rows: maxCounters, data: data, dataSize: size}}}
	}
	return b.counters, nil
}

func (b *Backend) push(buf *buffer) tensor.T {
	b.serial++
	buf.serial = b.serial
	for i := range b.bufs {
		if b.bufs[i] == nil {
			b.bufs[i] = buf
			return tensor.BufferT(i)
		}
	}
	b.bufs = append(b.bufs, buf)
	return tensor.BufferT(len(b.bufs) - 1)
}

func (b *Backend) buf(t tensor.T) *buffer {
	if i := t.Buffer(); i >= 0 && i < len(b.bufs) {
		return b.bufs[i]
	}
	return nil
}

// Free releases a buffer and every cached plan that binds it.
func (b *Backend) Free(t tensor.T) {
	buf := b.buf(t)
	if buf == nil {
		return
	}
	for key, p := range b.plans {
		if p.uses[buf.serial] {
			p.release()
			delete(b.plans, key)
			if b.last != nil && b.last.pl == p {
				b.last = nil
			}
		}
	}
	buf.release()
	b.bufs[t.Buffer()] = nil
}

// Shape of a buffer.
func (b *Backend) Shape(t tensor.T) []int {
	if buf := b.buf(t); buf != nil {
		return buf.shape
	}
	return nil
}

// Read copies an output of the last Run, or an Alloc'd buffer, to dst.
// Only the bytes of that tensor are mapped.
func (b *Backend) Read(t tensor.T, dst []float32) error {
	if b.last != nil {
		if _, ok := b.last.pl.readback[t]; ok {
			return b.last.Read(t, dst)
		}
	}
	buf := b.buf(t)
	if buf == nil || !buf.alloc {
		if t.Node() >= 0 {
			return fmt.Errorf("read: node %d was not an output of the last Run", t.Node())
		}
		return fmt.Errorf("read: %v holds no float data (weights cannot be read back)", t)
	}
	n := tensor.Elements(buf.shape)
	if len(dst) != n {
		return fmt.Errorf("read: dst has %d elements, tensor has %d", len(dst), n)
	}
	size := uint64(n) * 4
	st := &b.pool
	if _, err := growMapRead(b, &st.stage, &st.stSize, size, "read"); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	enc, err := b.dev.CreateCommandEncoder(nil)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	defer enc.Release()
	if err := enc.CopyBufferToBuffer(buf.blocks[0].data, 0, st.stage, 0, (size+3)&^3); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	cmd, err := enc.Finish(nil)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	b.queue.Submit(cmd)
	cmd.Release()
	return b.mapRead(st.stage, 0, dst)
}

// mapRead maps len(dst)*4 bytes of src at off, once the device has
// finished the submissions that write src, and copies them out.
func (b *Backend) mapRead(src *wgpu.Buffer, off uint64, dst []float32) error {
	if len(dst) == 0 {
		return nil
	}
	// Both targets (amd64, arm64) are little-endian, like the device data.
	return b.mapBytes(src, off, unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), len(dst)*4))
}

// mapBytes maps len(dst) bytes of src at off, once the device has finished
// the submissions that write src (not those queued after them), and copies
// them out.
func (b *Backend) mapBytes(src *wgpu.Buffer, off uint64, dst []byte) error {
	size := uint64(len(dst))
	mapSize := (size + 7) &^ 7
	var status wgpu.BufferMapAsyncStatus
	done := false
	release := holdGC()
	if err := src.MapAsync(wgpu.MapModeRead, off, mapSize, func(s wgpu.BufferMapAsyncStatus) { status, done = s, true }); err != nil {
		release()
		return fmt.Errorf("read: %w", err)
	}
	b.waitUntil(func(bool) bool { return done })
	release()
	if status != wgpu.BufferMapAsyncStatusSuccess {
		return fmt.Errorf("read: mapping the result failed (status %d; device lost?)", status)
	}
	copy(dst, src.GetMappedRange(uint(off), uint(mapSize)))
	return src.Unmap()
}

// gcHold keeps the garbage collector off while a buffer mapping is in
// flight. cogentcore/webgpu v0.23.0's MapAsync hands C the address of a
// heap-allocated cgo.Handle that nothing in Go keeps alive (upstream issue
// #6): a collection between MapAsync and its callback can free and reuse
// it, and the callback then panics with "misuse of an invalid Handle" (seen
// in engine/bench's gpu tests). No release with the fix is served, so the
// window is closed here instead: counted, since backends read at once.
var gcHold struct {
	sync.Mutex
	n, percent int
}

// holdGC turns collection off until every returned release has run.
func holdGC() (release func()) {
	gcHold.Lock()
	if gcHold.n == 0 {
		gcHold.percent = debug.SetGCPercent(-1)
	}
	gcHold.n++
	gcHold.Unlock()
	return func() {
		gcHold.Lock()
		if gcHold.n--; gcHold.n == 0 {
			debug.SetGCPercent(gcHold.percent)
		}
		gcHold.Unlock()
	}
}
