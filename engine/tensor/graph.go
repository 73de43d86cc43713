package tensor

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// T names a tensor: a node of a Graph, or a buffer a Backend owns (an
// uploaded weight or a persistent buffer such as a KV cache). The zero T
// means "none" (e.g. a norm without weight).
type T struct{ id int32 }

// IsNone reports whether t is the zero T.
func (t T) IsNone() bool { return t.id == 0 }

// Node returns the index of a graph node, or -1 when t is not one.
func (t T) Node() int {
	if t.id > 0 {
		return int(t.id - 1)
	}
	return -1
}

// Buffer returns the index of a backend buffer, or -1 when t is not one.
func (t T) Buffer() int {
	if t.id < 0 {
		return int(-t.id - 1)
	}
	return -1
}

// BufferT makes the T of backend buffer i. Only backends call it.
func BufferT(i int) T { return T{id: int32(-(i + 1))} }

// Backend runs graphs. cpu is the reference; every other backend must agree
// with it on every op (tensortest checks this).
type Backend interface {
	Name() string
	// Upload makes a weight resident (once per tensor, at load).
	Upload(w Weight) (T, error)
	// Alloc makes a zeroed persistent float32 buffer, e.g. a KV cache.
	Alloc(shape []int) (T, error)
	// Free releases a buffer made by Upload or Alloc.
	Free(t T)
	// Shape is the logical shape of a buffer.
	Shape(t T) []int
	// Run executes every node of g in one submission. Only outs may be
	// read afterwards (besides persistent buffers).
	Run(ctx context.Context, g *Graph, outs ...T) error
	// Read copies a float32 result of the last Run (or a buffer) to dst.
	Read(t T, dst []float32) error
	// Close frees everything the backend holds.
	Close() error
}

// UploadCopier is implemented by backends whose Upload copies a weight's
// bytes into memory of their own (device buffers), so the caller may release
// the source (unmap the checkpoint) once loading is done. On unified memory
// that is what keeps a loaded model from being resident twice.
type UploadCopier interface {
	CopiesUploads() bool
}

// Pipeliner is implemented by backends whose Run only queues the work.
// Start runs g like Run, but its outputs stay readable through the
// returned Pending while one more run is started after it. A decode loop
// can then queue step n+1, fed by step n's token where it lies on the
// device (Embed of a buffer that step n's Argmax was stored into), before
// it reads step n's token: building and submitting a step overlaps the
// device's work instead of following it.
type Pipeliner interface {
	Start(ctx context.Context, g *Graph, outs ...T) (Pending, error)
}

// Pending is a started run whose outputs have not been read.
type Pending interface {
	// Read waits for the run (and not for runs started after it) and
	// copies output t to dst. It fails once two more runs have started.
	Read(t T, dst []float32) error
}

// Profiler is implemented by backends that can time each kernel of a run.
type Profiler interface {
	// SetProfile turns per-kernel timing on or off (runs are slower while
	// it is on: every kernel is timed on its own).
	SetProfile(on bool) error
	// LastProfile is the device time of the last run by kind of kernel,
	// the largest first.
	LastProfile() ([]KernelTime, error)
}

// BandwidthReader is implemented by backends whose weights live in memory
// of their own (a GPU's): ReadBandwidth measures how fast the device's
// kernels read it, the rate of each of passes reads of about size bytes,
// in bytes per second.
type BandwidthReader interface {
	ReadBandwidth(size int64, passes int) ([]float64, error)
}

// KernelTime is the device time one kind of kernel took in a profiled run.
type KernelTime struct {
	Label string        `json:"label"`
	Count int           `json:"count"`
	Time  time.Duration `json:"ns"`
}

// Graph records one forward pass. Building it does no arithmetic: each
// method appends a node and returns its T, checking shapes as it goes so a
// wrong model fails while building, not halfway through a run.
type Graph struct {
	shapes interface{ Shape(T) []int }
	Nodes  []Node
	err    error
}

// Node is one recorded op. Backends read it; model code never does.
type Node struct {
	Op    Op
	In    []T
	Shape []int

	Ints   []int32   // OpInput with integer data
	Floats []float32 // OpInput with float data
	F      [2]float32
	I      [3]int
	Rope   *Rope
	Attn   *AttnSpec
}

// NewGraph starts a graph whose buffer shapes are those of b.
func NewGraph(b Backend) *Graph { return &Graph{shapes: b} }

// Err is the first shape error recorded while building, if any.
func (g *Graph) Err() error { return g.err }

// Shape returns the shape of a node or buffer.
func (g *Graph) Shape(t T) []int {
	if n := t.Node(); n >= 0 {
		return g.Nodes[n].Shape
	}
	if t.IsNone() {
		return nil
	}
	return g.shapes.Shape(t)
}

func (g *Graph) fail(format string, args ...any) T {
	if g.err == nil {
		g.err = fmt.Errorf(format, args...)
	}
	return g.add(Node{Op: OpInvalid})
}

func (g *Graph) add(n Node) T {
	g.Nodes = append(g.Nodes, n)
	return T{id: int32(len(g.Nodes))}
}

func last(s []int) int {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// isSuffix reports whether b's shape is a suffix of a's, so b broadcasts
// over a's leading axes.
func isSuffix(a, b []int) bool {
	if len(b) > len(a) {
		return false
	}
	return slices.Equal(a[len(a)-len(b):], b)
}

func clone(s []int) []int { return append([]int(nil), s...) }
