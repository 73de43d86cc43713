package cpu

import (
	"fmt"
	"math"

	"hearth/engine/tensor"
)

// dot is a float32 dot product with eight partial sums, which keeps the
// rounding error close to a blocked BLAS kernel's.
func dot(a, b []float32) float32 {
	var s [8]float32
	n := len(a)
	b = b[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		s[0] += a[i] * b[i]
		s[1] += a[i+1] * b[i+1]
		s[2] += a[i+2] * b[i+2]
		s[3] += a[i+3] * b[i+3]
		s[4] += a[i+4] * b[i+4]
		s[5] += a[i+5] * b[i+5]
		s[6] += a[i+6] * b[i+6]
		s[7] += a[i+7] * b[i+7]
	}
	for ; i < n; i++ {
		s[0] += a[i] * b[i]
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

func (b *Backend) matmul(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	ws := g.Shape(n.In[1])
	outN, k := ws[0], ws[1]
	x := b.f32(n.In[0])
	if x == nil {
		return fmt.Errorf("matmul input has no data")
	}
	w, err := b.rowsOf(n.In[1], k)
	if err != nil {
		return err
	}
	m := len(x) / k
	out := make([]float32, m*outN)
	b.parallel(outN, func(lo, hi int) {
		scratch := make([]float32, k)
		for j := lo; j < hi; j++ {
			wr := w.row(j, scratch)
			for r := 0; r < m; r++ {
				out[r*outN+j] = dot(x[r*k:(r+1)*k], wr)
			}
		}
	})
	b.vals[i] = out
	return nil
}

func binary(op tensor.Op, a, bb []float32) []float32 {
	out := make([]float32, len(a))
	m := len(bb)
	for j := range a {
		if op == tensor.OpAdd {
			out[j] = a[j] + bb[j%m]
		} else {
			out[j] = a[j] * bb[j%m]
		}
	}
	return out
}

func unary(op tensor.Op, x []float32, c float32) []float32 {
	out := make([]float32, len(x))
	for j, v := range x {
		switch op {
		case tensor.OpSiLU:
			out[j] = v / (1 + float32(math.Exp(float64(-v))))
		case tensor.OpGELUTanh:
			const k = 0.7978845608028654 // √(2/π)
			out[j] = 0.5 * v * (1 + float32(math.Tanh(k*(float64(v)+0.044715*float64(v)*float64(v)*float64(v)))))
		case tensor.OpGELU:
			out[j] = 0.5 * v * (1 + float32(math.Erf(float64(v)/math.Sqrt2)))
		case tensor.OpTanhCap:
			out[j] = c * float32(math.Tanh(float64(v/c)))
		}
	}
	return out
}

func softmax(x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for j, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		x[j] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for j := range x {
		x[j] *= inv
	}
}

func (b *Backend) norm(g *tensor.Graph, i int) error {
	n := &g.Nodes[i]
	x := b.f32(n.In[0])
	c := n.Shape[len(n.Shape)-1]
	var w, bias []float32
	decode := func(t tensor.T) ([]float32, error) {
		if t.IsNone() {
			return nil, nil
		}
		r, err := b.rowsOf(t, c)
		if err != nil {
			return nil, err
		}
		return append([]float32(nil), r.row(0, make([]float32, c))...), nil
	}
	var err error
	if len(n.In) > 1 {
		if w, err = decode(n.In[1]); err != nil {
			return err
		}
	}
	if len(n.In) > 2 {
		if bias, err = decode(n.In[2]); err != nil {
			return err
		}
	}
	out := make([]float32, len(x))
	eps, shift := float64(n.F[0]), n.F[1]
	for r := 0; r < len(x); r += c {
		row, o := x[r:r+c], out[r:r+c]
		var mean float64
		if n.Op == tensor.OpLayerNorm {
			for _, v := range row {
				mean += float64(v)
			}
			mean /= float64(c)
		}
		var ss float64
		for _, v := range row {
			d := float64(v) - mean
			ss += d * d
		}
		inv := float32(1 / math.Sqrt(ss/float64(c)+eps))
		for j, v := range row {
			y := (v - float32(mean)) * inv
			if w != nil {
				y *= w[j] + shift
			}
			if bias != nil {
				y += bias[j]
			}
			o[j] = y
		}
	}
	b.vals[i] = out
	return nil
}

// rope follows Hugging Face's apply_rotary_pos_emb: angles p·inv_freq in
// float32, cos and sin times the attention factor, rotate_half pairing (or
// adjacent pairs when traditional).
func rope(x []float32, pos []int32, shape []int, r *tensor.Rope) []float32 {
	out := append([]float32(nil), x...)
	heads, hd := shape[1], shape[2]
	half := r.Dims / 2
	cos := make([]float32, half)
	sin := make([]float32, half)
	for t, p := range pos {
		for j := 0; j < half; j++ {
			a := float32(p) * r.InvFreq[j]
			cos[j] = float32(math.Cos(float64(a))) * r.Scale
			sin[j] = float32(math.Sin(float64(a))) * r.Scale
		}
		for h := 0; h < heads; h++ {
			v := out[(t*heads+h)*hd:]
			for j := 0; j < half; j++ {
				i1, i2 := j, j+half
				if r.Traditional {
					i1, i2 = 2*j, 2*j+1
				}
				x1, x2 := v[i1], v[i2]
				v[i1] = x1*cos[j] - x2*sin[j]
				v[i2] = x2*cos[j] + x1*sin[j]
			}
		}
	}
	return out
}

func slice(x []float32, shape []int, a [3]int) []float32 {
	axis, start, end := a[0], a[1], a[2]
	if axis == 0 {
		row := tensor.Elements(shape[1:])
		return x[start*row : end*row]
	}
	c := shape[len(shape)-1]
	w := end - start
	out := make([]float32, len(x)/c*w)
	for r := 0; r < len(x)/c; r++ {
		copy(out[r*w:(r+1)*w], x[r*c+start:r*c+end])
	}
	return out
}

func (b *Backend) attention(g *tensor.Graph, n *tensor.Node) []float32 {
	q, k, v := b.f32(n.In[0]), b.f32(n.In[1]), b.f32(n.In[2])
	s := n.Attn
	nq, hq, d := n.Shape[0], n.Shape[1], n.Shape[2]
	hkv := g.Shape(n.In[1])[1]
	group := hq / hkv
	out := make([]float32, len(q))
	b.parallel(nq*hq, func(lo, hi int) {
		scores := make([]float32, s.KeyLen)
		acc := make([]float64, d)
		for qh := lo; qh < hi; qh++ {
			i, h := qh/hq, qh%hq
			qp := s.QueryPos + i
			first, lastKey := 0, s.KeyLen-1
			if !s.Bidirectional {
				lastKey = qp
				if s.Window > 0 {
					first = max(0, qp-s.Window+1)
				}
			}
			qv := q[(i*hq+h)*d : (i*hq+h+1)*d]
			kvh := h / group
			mx := float32(math.Inf(-1))
			for p := first; p <= lastKey; p++ {
				row := p
				if s.Ring > 0 {
					row = p % s.Ring
				}
				sc := dot(qv, k[(row*hkv+kvh)*d:(row*hkv+kvh+1)*d]) * s.Scale
				if s.Softcap > 0 {
					sc = s.Softcap * float32(math.Tanh(float64(sc/s.Softcap)))
				}
				scores[p-first] = sc
				mx = max(mx, sc)
			}
			var sum float64
			for j := range acc {
				acc[j] = 0
			}
			for p := first; p <= lastKey; p++ {
				e := float32(math.Exp(float64(scores[p-first] - mx)))
				sum += float64(e)
				row := p
				if s.Ring > 0 {
					row = p % s.Ring
				}
				vv := v[(row*hkv+kvh)*d : (row*hkv+kvh+1)*d]
				for j, x := range vv {
					acc[j] += float64(e) * float64(x)
				}
			}
			o := out[(i*hq+h)*d : (i*hq+h+1)*d]
			for j := range o {
				o[j] = float32(acc[j] / sum)
			}
		}
	})
	return out
}
