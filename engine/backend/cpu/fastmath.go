package cpu

import "math"

// exp32 is e^x in float32 arithmetic (Cephes' expf: a degree-6 polynomial
// after range reduction by ln 2), within 2 ulp of the correctly rounded
// result for normal outputs; results below the smallest normal float32
// flush to zero.
func exp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -87.33654:
		return 0
	}
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*c1 - n*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	p = p*r*r + r + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// expSumGo sets x[i] = exp32(x[i] - mx) and returns their sum.
func expSumGo(x []float32, mx float32) float32 {
	var s float32
	for i, v := range x {
		e := exp32(v - mx)
		x[i] = e
		s += e
	}
	return s
}
