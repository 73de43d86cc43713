// Package nn holds the thin layers model code is written with (Linear,
// norms, rope tables) and the Loader that binds checkpoint tensors onto a
// backend by their checkpoint names.
package nn

import (
	"fmt"
	"slices"

	"hearth/engine/tensor"
	"hearth/engine/weights"
)

// Loader uploads checkpoint tensors to a backend by name. Misses are
// recorded by the Binder and reported once by the audit; upload errors are
// kept and returned by Err.
type Loader struct {
	B   tensor.Backend
	W   *weights.Binder
	err error
}

// Err is the first upload error, if any.
func (l *Loader) Err() error { return l.err }

func (l *Loader) upload(w tensor.Weight, shape ...int) tensor.T {
	if w.Data == nil || l.err != nil {
		return tensor.T{}
	}
	if !slices.Equal(w.Shape, shape) {
		l.err = fmt.Errorf("tensor %q has shape %v, the config implies %v", w.Name, w.Shape, shape)
		return tensor.T{}
	}
	t, err := l.B.Upload(w)
	if err != nil {
		l.err = err
	}
	return t
}

// Weight uploads a weight the caller got from the Binder (or assembled from
// several, e.g. stacked experts), checking its logical shape. A zero
// Weight (a miss the Binder recorded) gives none.
func (l *Loader) Weight(w tensor.Weight, shape ...int) tensor.T { return l.upload(w, shape...) }

// Fail records a load error found by model code; the first one is kept.
func (l *Loader) Fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

// Tensor uploads a required dense tensor of the given shape.
func (l *Loader) Tensor(name string, shape ...int) tensor.T {
	return l.upload(l.W.Tensor(name), shape...)
}

// Optional uploads a tensor when the checkpoint has it, else returns none.
func (l *Loader) Optional(name string, shape ...int) tensor.T {
	w, ok := l.W.Optional(name)
	if !ok {
		return tensor.T{}
	}
	return l.upload(w, shape...)
}

// Linear binds prefix.weight [out, in] (dense or MLX-quantized) and, when
// bias is true, prefix.bias [out].
func (l *Loader) Linear(prefix string, out, in int, bias bool) Linear {
	lin := Linear{W: l.upload(l.W.Linear(prefix), out, in)}
	if bias {
		lin.B = l.Tensor(prefix+".bias", out)
	}
	return lin
}

// Linear is y = x·Wᵀ + b.
type Linear struct{ W, B tensor.T }

// Forward applies the layer.
func (m Linear) Forward(g *tensor.Graph, x tensor.T) tensor.T {
	y := g.MatMul(x, m.W)
	if !m.B.IsNone() {
		y = g.Add(y, m.B)
	}
	return y
}

// RMSNorm is x / rms(x) * (w + Shift).
type RMSNorm struct {
	W     tensor.T
	Eps   float32
	Shift float32
}

// Forward applies the norm over the last axis.
func (m RMSNorm) Forward(g *tensor.Graph, x tensor.T) tensor.T {
	return g.RMSNorm(x, m.W, m.Eps, m.Shift)
}
