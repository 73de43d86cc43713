package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cogentcore/webgpu/wgpu"

	"hearth/engine/tensor"
)

// pool holds the device buffers every plan shares: result slots, the
// inputs buffer, the parameter buffer and the readback buffer. They only
// grow; when one is replaced, gen changes and plans rebind.
type pool struct {
	gen     uint64
	slots   []*wgpu.Buffer
	sizes   []uint64
	inputs  *wgpu.Buffer
	inSize  uint64
	params  *wgpu.Buffer
	parSize uint64
	// Runs alternate between two readback buffers, so a started run's
	// outputs (Start) stay readable while the next run is queued.
	readback [2]*wgpu.Buffer
	rbSize   [2]uint64
	rbGen    [2]uint64
	par      int          // readback buffer of the next run
	runs     uint64       // runs started
	stage    *wgpu.Buffer // reads of persistent buffers
	stSize   uint64
}

func dropBuffer(b *wgpu.Buffer) {
	if b != nil {
		b.Destroy()
		b.Release()
	}
}

func (p *pool) release() {
	for _, s := range p.slots {
		dropBuffer(s)
	}
	p.slots, p.sizes = nil, nil
	dropBuffer(p.inputs)
	dropBuffer(p.params)
	for i := range p.readback {
		dropBuffer(p.readback[i])
	}
	dropBuffer(p.stage)
	p.inputs, p.params, p.readback, p.stage = nil, nil, [2]*wgpu.Buffer{}, nil
	p.inSize, p.parSize, p.rbSize, p.stSize = 0, 0, [2]uint64{}, 0
}

// ensure grows the shared buffers to what plan pl needs.
func (p *pool) ensure(b *Backend, pl *plan) error {
	grow := func(cur **wgpu.Buffer, have *uint64, need uint64, usage wgpu.BufferUsage, label string) error {
		if *cur != nil && *have >= need {
			return nil
		}
		size := max(need, 256)
		buf, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Size: size, Usage: usage})
		if err != nil {
			return fmt.Errorf("allocate %d bytes for %s: %w", size, label, err)
		}
		dropBuffer(*cur)
		*cur, *have = buf, size
		p.gen++
		return nil
	}
	for len(p.slots) < len(pl.slots) {
		p.slots = append(p.slots, nil)
		p.sizes = append(p.sizes, 0)
	}
	for i, need := range pl.slots {
		if need > b.maxBind {
			return fmt.Errorf("an intermediate result of %d bytes exceeds the adapter's %d-byte binding limit (shorten the prefill chunk)", need, b.maxBind)
		}
		if err := grow(&p.slots[i], &p.sizes[i], need, storageUsage, "result"); err != nil {
			return err
		}
	}
	if err := grow(&p.inputs, &p.inSize, max(16, pl.inBytes), storageUsage, "inputs"); err != nil {
		return err
	}
	if err := grow(&p.params, &p.parSize, uint64(len(pl.params)), wgpu.BufferUsageUniform|wgpu.BufferUsageCopyDst, "params"); err != nil {
		return err
	}
	return p.ensureReadback(b, p.par, pl.rbBytes)
}

// ensureReadback grows readback buffer i (never bound, so plans keep
// their bindings).
func (p *pool) ensureReadback(b *Backend, i int, need uint64) error {
	grew, err := growMapRead(b, &p.readback[i], &p.rbSize[i], need, "readback")
	if grew {
		p.rbGen[i]++ // pre-encoded copies into the old one are void
	}
	return err
}

// growMapRead replaces *buf with a host-readable copy target of at least
// need bytes (rounded up to 256) when it is smaller, reporting whether it
// did.
func growMapRead(b *Backend, buf **wgpu.Buffer, size *uint64, need uint64, label string) (bool, error) {
	if *buf != nil && *size >= need {
		return false, nil
	}
	n := max((need+255)&^255, 256)
	nb, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Size: n, Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
	if err != nil {
		return false, fmt.Errorf("allocate %d bytes for %s: %w", n, label, err)
	}
	dropBuffer(*buf)
	*buf, *size = nb, n
	return true, nil
}

// resolve is the device buffer, offset and size an operand binds.
func (b *Backend) resolve(pl *plan, o operand) (*wgpu.Buffer, uint64, uint64) {
	switch o.kind {
	case opSlot:
		return b.pool.slots[o.slot], 0, o.size
	case opInput:
		in := pl.inputs[o.input]
		return b.pool.inputs, in.off, in.size
	case opSB:
		bl := o.buf.blocks[o.blk]
		return bl.sb, 0, bl.sbSize
	default:
		bl := o.buf.blocks[o.blk]
		return bl.data, 0, bl.dataSize
	}
}

// bind (re)makes every kernel's bind group for the current pool.
func (b *Backend) bind(pl *plan) error {
	stride := b.paramStride()
	for k, kn := range pl.kernels {
		if kn.group != nil {
			kn.group.Release()
		}
		entries := []wgpu.BindGroupEntry{{Binding: 0, Buffer: b.pool.params, Offset: uint64(k) * stride, Size: 64}}
		for i, o := range kn.ops {
			buf, off, size := b.resolve(pl, o)
			entries = append(entries, wgpu.BindGroupEntry{Binding: uint32(i + 1), Buffer: buf, Offset: off, Size: size})
		}
		grp, err := b.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Label: kn.label, Layout: b.layout(kn.pipe), Entries: entries})
		if err != nil {
			return fmt.Errorf("bind kernel %d (%s): %w", k, kn.label, err)
		}
		kn.group = grp
	}
	pl.gen = b.pool.gen
	return nil
}

// layout is a pipeline's bind group layout, fetched once per pipeline and
// released by Close (each handle holds the device: a leaked one keeps the
// device alive, and NVIDIA's driver failed after about 80 leaked devices).
func (b *Backend) layout(p *wgpu.ComputePipeline) *wgpu.BindGroupLayout {
	l, ok := b.layouts[p]
	if !ok {
		l = p.GetBindGroupLayout(0)
		b.layouts[p] = l
	}
	return l
}

// dropReady forgets the pre-encoded command buffers.
func (p *plan) dropReady() {
	for i, r := range p.ready {
		if r != nil {
			r.Release()
			p.ready[i] = nil
		}
	}
}

func (p *plan) release() {
	p.dropReady()
	for _, k := range p.kernels {
		if k.group != nil {
			k.group.Release()
			k.group = nil
		}
	}
}

// maxPlans bounds the plan cache (prefill chunk, tail, decode, … per
// sequence); the least recently used is dropped.
const maxPlans = 16

// Run executes every node of g as one command submission.
func (b *Backend) Run(ctx context.Context, g *tensor.Graph, outs ...tensor.T) error {
	_, err := b.start(ctx, g, outs)
	return err
}

// Start runs g like Run and returns its outputs as a tensor.Pending,
// readable until two more runs have started: runs alternate between two
// readback buffers, and a read waits for its own submission only.
func (b *Backend) Start(ctx context.Context, g *tensor.Graph, outs ...tensor.T) (tensor.Pending, error) {
	return b.start(ctx, g, outs)
}

// pending is a started run's outputs in readback buffer par.
type pending struct {
	b   *Backend
	pl  *plan
	par int
	run uint64 // pool.runs after it started
	gen uint64 // pool.rbGen[par] it copied into
}

func (p *pending) Read(t tensor.T, dst []float32) error {
	pool := &p.b.pool
	if pool.runs-p.run >= 2 || pool.rbGen[p.par] != p.gen {
		return fmt.Errorf("read: the run's outputs were overwritten (%d runs started since)", pool.runs-p.run)
	}
	r, ok := p.pl.readback[t]
	if !ok {
		return fmt.Errorf("read: %v was not an output of the run", t)
	}
	if len(dst) != r.elems {
		return fmt.Errorf("read: dst has %d elements, tensor has %d", len(dst), r.elems)
	}
	return p.b.mapRead(pool.readback[p.par], r.off, dst)
}

func (b *Backend) start(ctx context.Context, g *tensor.Graph, outs []tensor.T) (*pending, error) {
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	key := b.planKey(g, outs)
	pl, ok := b.plans[key]
	if !ok {
		var err error
		if pl, err = b.compile(g, outs); err != nil {
			return nil, fmt.Errorf("gpu: %w", err)
		}
		if len(b.plans) >= maxPlans {
			b.evict()
		}
		b.plans[key] = pl
	}
	b.clock++
	pl.used = b.clock
	if err := b.pool.ensure(b, pl); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if pl.gen != b.pool.gen {
		pl.dropReady()
		if err := b.bind(pl); err != nil {
			return nil, fmt.Errorf("gpu: %w", err)
		}
	}
	b.last = nil
	t1 := time.Now()
	if err := b.upload(g, pl); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	t2 := time.Now()
	par := b.pool.par
	if err := b.submit(pl, par); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	b.pool.runs++
	b.pool.par = par ^ 1
	b.last = &pending{b: b, pl: pl, par: par, run: b.pool.runs, gen: b.pool.rbGen[par]}
	b.times.Plan, b.times.Upload = t1.Sub(t0), t2.Sub(t1)
	return b.last, nil
}

// RunTimes is where the host time of the last Run went.
type RunTimes struct {
	Plan   time.Duration // plan lookup (or compile), pool and bindings
	Upload time.Duration // inputs and kernel parameters filled and written
	Submit time.Duration // encoding (when not ready) and queue submission
	Encode time.Duration // encoding the next run's commands after submitting (overlaps the device)
}

// LastRunTimes reports the host time of the last Run by phase.
func (b *Backend) LastRunTimes() RunTimes { return b.times }

func (b *Backend) evict() {
	var oldest string
	var at uint64
	for k, p := range b.plans {
		if oldest == "" || p.used < at {
			oldest, at = k, p.used
		}
	}
	b.plans[oldest].release()
	if b.last != nil && b.last.pl == b.plans[oldest] {
		b.last = nil
	}
	delete(b.plans, oldest)
}

// upload writes this run's inputs and kernel parameters.
func (b *Backend) upload(g *tensor.Graph, pl *plan) error {
	for _, in := range pl.inputs {
		if err := in.fill(g, pl.inData[in.off:in.off+in.size]); err != nil {
			return err
		}
	}
	stride := b.paramStride()
	var words [16]uint32
	for k, kn := range pl.kernels {
		words = [16]uint32{}
		kn.params(g, &words)
		dst := pl.params[uint64(k)*stride:]
		for i, w := range words {
			binary.LittleEndian.PutUint32(dst[i*4:], w)
		}
	}
	if pl.inBytes > 0 {
		if err := b.queue.WriteBuffer(b.pool.inputs, 0, pl.inData[:pl.inBytes]); err != nil {
			return err
		}
	}
	if len(pl.kernels) > 0 {
		return b.queue.WriteBuffer(b.pool.params, 0, pl.params)
	}
	return nil
}

// encode records the plan: every kernel in one compute pass (one pass per
// kernel when profiling), then the copies of the outputs to the readback
// buffer.
func (b *Backend) encode(pl *plan, par int) (*wgpu.CommandBuffer, error) {
	enc, err := b.dev.CreateCommandEncoder(nil)
	if err != nil {
		return nil, err
	}
	defer enc.Release()
	if b.stamp != nil {
		if err := b.stamp.encode(enc, pl); err != nil {
			return nil, err
		}
	} else {
		pass := enc.BeginComputePass(nil)
		for _, kn := range pl.kernels {
			if kn.grid[0] == 0 {
				continue
			}
			pass.SetPipeline(kn.pipe)
			pass.SetBindGroup(0, kn.group, nil)
			pass.DispatchWorkgroups(kn.grid[0], kn.grid[1], kn.grid[2])
		}
		err := pass.End()
		pass.Release()
		if err != nil {
			return nil, err
		}
	}
	for _, o := range pl.outs {
		src, off, _ := b.resolve(pl, o.src)
		if o.src.kind == opInput {
			off = o.off
		}
		if err := enc.CopyBufferToBuffer(src, off, b.pool.readback[par], o.dst, (o.size+3)&^3); err != nil {
			return nil, err
		}
	}
	if b.stamp != nil {
		b.stamp.resolve(enc)
	}
	return enc.Finish(nil)
}

// submit submits the plan's command buffer for readback buffer par, then
// encodes the next one (for the other readback buffer, when it is big
// enough) while the device works: a plan's commands never change between
// runs (grids are fixed, parameters live in the params buffer), so the
// next step of a decode loop only uploads its inputs and parameters and
// submits.
func (b *Backend) submit(pl *plan, par int) error {
	t0 := time.Now()
	cmd := pl.ready[par]
	pl.ready[par] = nil
	if cmd == nil || pl.readyGen[par] != b.pool.rbGen[par] || b.stamp != nil {
		if cmd != nil {
			cmd.Release()
		}
		var err error
		if cmd, err = b.encode(pl, par); err != nil {
			return err
		}
	}
	b.queue.Submit(cmd)
	cmd.Release()
	t1 := time.Now()
	b.times.Submit, b.times.Encode = t1.Sub(t0), 0
	next := par ^ 1
	if b.stamp == nil && b.pool.readback[next] != nil && b.pool.rbSize[next] >= pl.rbBytes {
		if pl.ready[next] != nil {
			pl.ready[next].Release()
			pl.ready[next] = nil
		}
		cmd, err := b.encode(pl, next)
		if err != nil {
			return err
		}
		pl.ready[next], pl.readyGen[next] = cmd, b.pool.rbGen[next]
		b.times.Encode = time.Since(t1)
	}
	return nil
}
