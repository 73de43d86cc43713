package media

import "math"

// Resample converts a to rate with torchaudio.functional.resample's
// default filter (sinc_interp_hann, lowpass_filter_width 6, rolloff
// 0.99): a windowed-sinc kernel per output phase over the rates divided by
// their gcd, zero padding at both ends, and ceil(n·new/old) samples out.
// It is written out here, in float64, to give the reference's samples
// (within the float32 rounding the reference works in): the feature
// extractors' goldens take 16 kHz input, so what reaches them must be what
// torchaudio would have made.
func Resample(a Audio, rate int) Audio {
	if a.Rate == rate || len(a.Samples) == 0 {
		return Audio{Rate: rate, Samples: a.Samples}
	}
	const width6, rolloff = 6.0, 0.99
	g := gcd(a.Rate, rate)
	orig, next := a.Rate/g, rate/g
	base := float64(min(orig, next)) * rolloff
	width := int(math.Ceil(width6 * float64(orig) / base))
	taps := 2*width + orig
	// kernel[j][k]: the weight of padded input sample f·orig + k for the
	// output sample f·next + j.
	kernel := make([][]float64, next)
	for j := range kernel {
		kernel[j] = make([]float64, taps)
		for k := range taps {
			t := (-float64(j)/float64(next) + float64(k-width)/float64(orig)) * base
			t = max(-width6, min(width6, t))
			w := math.Cos(t * math.Pi / width6 / 2)
			w *= w
			t *= math.Pi
			v := 1.0
			if t != 0 {
				v = math.Sin(t) / t
			}
			kernel[j][k] = v * w * base / float64(orig)
		}
	}
	n := len(a.Samples)
	frames := n/orig + 1
	outLen := int(math.Ceil(float64(next) * float64(n) / float64(orig)))
	out := make([]float32, 0, frames*next)
	at := func(i int) float64 { // the input padded by width zeros in front
		i -= width
		if i < 0 || i >= n {
			return 0
		}
		return float64(a.Samples[i])
	}
	// Outside |t| < 6 the window is zero: keep each phase's nonzero run.
	lo, hi := make([]int, next), make([]int, next)
	for j, row := range kernel {
		for lo[j] < taps && row[lo[j]] == 0 {
			lo[j]++
		}
		for hi[j] = taps; hi[j] > lo[j] && row[hi[j]-1] == 0; hi[j]-- {
		}
	}
	for f := 0; f < frames && len(out) < outLen; f++ {
		for j := 0; j < next && len(out) < outLen; j++ {
			var sum float64
			for k := lo[j]; k < hi[j]; k++ {
				sum += kernel[j][k] * at(f*orig+k)
			}
			out = append(out, float32(sum))
		}
	}
	return Audio{Rate: rate, Samples: out}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
