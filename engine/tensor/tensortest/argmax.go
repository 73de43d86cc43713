package tensortest

import (
	"math"

	"hearth/engine/tensor"
)

// argmax adds cases for Argmax: small and vocabulary-wide rows (odd
// widths, so a GPU's last workgroup is partial), many ties, equal maxima
// far apart (different workgroups of a split reduction), and the special
// values whose rule comes from the host sampler: NaN, ±Inf, ±0.
func argmax(add func(string, func(*checker, *tensor.Graph) (tensor.T, []float64))) {
	rows := func(name string, n, v int, fill func(x []float32)) {
		add(name, func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
			x := c.randn(n * v)
			fill(x)
			want := make([]float64, n)
			for r := range want {
				want[r] = argmaxRef(widen(x[r*v : (r+1)*v]))
			}
			return g.Argmax(g.Input(x, n, v)), want
		})
	}
	none := func([]float32) {}
	rows("Argmax/small", 5, 7, none)
	rows("Argmax/one", 4, 1, none)
	rows("Argmax/odd", 3, 1237, none)
	rows("Argmax/vocab", 2, 151937, func(x []float32) {
		// the max in the last element of a row, then in the first
		x[151936] = 9
		x[151937] = 9
	})
	rows("Argmax/decode", 1, 128256, none)
	rows("Argmax/ties", 6, 4099, func(x []float32) {
		for i := range x {
			x[i] = float32(math.Round(float64(x[i]) * 1.5)) // few levels: many equal maxima
		}
	})
	add("Argmax/ties-far", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		const v = 128256
		x := c.randn(3 * v)
		for _, i := range []int{70001, 9, v - 1} {
			x[i] = 7 // first: 9
		}
		for _, i := range []int{v - 1, 65536, 40000} {
			x[v+i] = 7 // first: 40000
		}
		for _, i := range []int{v - 200, v - 1} { // both in the last workgroup's part: v-200
			x[2*v+i] = 7
		}
		want := make([]float64, 3)
		for r := range want {
			want[r] = argmaxRef(widen(x[r*v : (r+1)*v]))
		}
		return g.Argmax(g.Input(x, 3, v)), want
	})
	rows("Argmax/nan-wide", 3, 5003, func(x []float32) {
		// rows of many parts: one starting with NaN (0), one with NaNs
		// scattered over its parts, including where its max would be
		for i := 0; i < len(x); i += 7 {
			x[i] = float32(math.NaN())
		}
		x[5003+2], x[5003+4900] = 8, 9
	})
	add("Argmax/special", func(c *checker, g *tensor.Graph) (tensor.T, []float64) {
		nan, inf := float32(math.NaN()), float32(math.Inf(1))
		negz := float32(math.Copysign(0, -1))
		const v = 9
		special := [][v]float32{
			{nan, 1, 2, 3, 4, 5, 6, 7, 8},                             // NaN first: 0, as the host sampler
			{0, nan, 5, nan, 5, 1, nan, 2, 3},                         // NaN skipped: 2
			{-inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf, -inf},    // all -Inf: 0
			{1, inf, 2, inf, 3, 4, 5, 6, 7},                           // +Inf twice: 1
			{-1, -2, negz, -3, 0, -4, -5, -6, -7},                     // -0 equals +0: 2
			{nan, nan, nan, nan, nan, nan, nan, nan, nan},             // all NaN: 0
			{-inf, nan, -inf, -3, nan, -inf, -2.5, -2.5, -inf},        // 6
			{-3e38, -3.4e38, -3.4028235e38, -1e38, -1e38, 0, 0, 0, 0}, // 5
		}
		x := make([]float32, 0, len(special)*v)
		want := make([]float64, len(special))
		for r, row := range special {
			x = append(x, row[:]...)
			want[r] = argmaxRef(widen(row[:]))
		}
		return g.Argmax(g.Input(x, len(special), v)), want
	})
}

// argmaxRef is the first index of the largest non-NaN value, and 0 when
// the row starts with NaN (the host sampler compares each value with the
// best so far, and nothing compares greater than a NaN).
func argmaxRef(row []float64) float64 {
	if math.IsNaN(row[0]) {
		return 0
	}
	mx := row[0]
	for _, v := range row {
		if v > mx {
			mx = v
		}
	}
	for i, v := range row {
		if v == mx {
			return float64(i)
		}
	}
	return 0
}
