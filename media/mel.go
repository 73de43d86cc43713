package media

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// Log-mel features of the audio models we run, computed as their
// transformers feature extractors do (in float64 here, where the
// reference works in float32: the goldens hold the difference under 1e-5).

// Features are log-mel frames: Bins values per frame, frame-major.
type Features struct {
	Bins, Frames int
	Data         []float32 // [Frames][Bins]
	// Valid is the number of frames that hold the audio rather than
	// padding (the extractor's attention mask).
	Valid int
}

// WhisperExtractor is WhisperFeatureExtractor: 16 kHz audio padded or cut
// to 30 s, a 400-point STFT (hop 160, periodic Hann window, reflection at
// the ends) of which the last frame is dropped, power spectra through
// Slaney-normalized Slaney-scale mel filters, log10 floored at 1e-10,
// clamped to 8 below the maximum and scaled as (x + 4) / 4.
type WhisperExtractor struct {
	Bins    int // feature_size: 80, or 128 for large-v3
	Samples int // n_samples: 480000 (30 s)
	filters [][]float64
}

// Whisper's fixed framing.
const (
	whisperRate = 16000
	whisperFFT  = 400
	whisperHop  = 160
)

// NewWhisperExtractor makes the extractor for bins mel bins over chunk
// samples at 16 kHz.
func NewWhisperExtractor(bins, chunk int) *WhisperExtractor {
	return &WhisperExtractor{Bins: bins, Samples: chunk,
		filters: melFilters(whisperFFT/2+1, bins, 0, 8000, whisperRate)}
}

// Rate is the sampling rate the extractor takes.
func (e *WhisperExtractor) Rate() int { return whisperRate }

// Extract computes the features of a (already at 16 kHz). Audio longer
// than the chunk is cut, as the reference's truncation does; cut reports
// whether it was.
func (e *WhisperExtractor) Extract(a Audio) (f Features, cut bool) {
	x := make([]float64, e.Samples)
	n := min(len(a.Samples), e.Samples)
	for i := range n {
		x[i] = float64(a.Samples[i])
	}
	power := stftPower(x, whisperFFT, whisperHop, hannPeriodic(whisperFFT))
	frames := len(power) - 1 // the reference drops the last frame
	f = Features{Bins: e.Bins, Frames: frames, Data: make([]float32, frames*e.Bins),
		Valid: min(frames, (n+whisperHop-1)/whisperHop)}
	logs := make([]float64, frames*e.Bins)
	top := math.Inf(-1)
	for t := range frames {
		for m, filt := range e.filters {
			var s float64
			for k, w := range filt {
				s += w * power[t][k]
			}
			v := math.Log10(max(s, 1e-10))
			logs[t*e.Bins+m] = v
			top = max(top, v)
		}
	}
	for i, v := range logs {
		f.Data[i] = float32((max(v, top-8) + 4) / 4)
	}
	return f, len(a.Samples) > e.Samples
}

// hannPeriodic is torch.hann_window(n) (periodic=True).
func hannPeriodic(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n))
	}
	return w
}

// stftPower is |torch.stft(x, nFFT, hop, window, center=True,
// pad_mode="reflect")|²: one row of nFFT/2+1 bins per frame.
func stftPower(x []float64, nFFT, hop int, window []float64) [][]float64 {
	pad := nFFT / 2
	padded := make([]float64, len(x)+2*pad)
	copy(padded[pad:], x)
	for i := 1; i <= pad; i++ {
		// Reflection without repeating the edge sample.
		padded[pad-i] = x[min(i, len(x)-1)]
		padded[pad+len(x)-1+i] = x[max(len(x)-1-i, 0)]
	}
	fft := fourier.NewFFT(nFFT)
	frames := 1 + (len(padded)-nFFT)/hop
	out := make([][]float64, frames)
	buf := make([]float64, nFFT)
	coef := make([]complex128, nFFT/2+1)
	for t := range frames {
		for i := range buf {
			buf[i] = padded[t*hop+i] * window[i]
		}
		coef = fft.Coefficients(coef, buf)
		row := make([]float64, len(coef))
		for k, c := range coef {
			row[k] = real(c)*real(c) + imag(c)*imag(c)
		}
		out[t] = row
	}
	return out
}

// melFilters is transformers' mel_filter_bank with norm="slaney" and
// mel_scale="slaney": triangular filters between mel-spaced edges, each
// scaled by 2 / its width in Hz. filters[m][k] weighs FFT bin k.
func melFilters(freqBins, mels int, fmin, fmax float64, rate int) [][]float64 {
	lo, hi := hzToMelSlaney(fmin), hzToMelSlaney(fmax)
	edges := make([]float64, mels+2)
	for i := range edges {
		edges[i] = melToHzSlaney(lo + (hi-lo)*float64(i)/float64(mels+1))
	}
	fftFreqs := make([]float64, freqBins)
	for k := range fftFreqs {
		fftFreqs[k] = float64(rate/2) * float64(k) / float64(freqBins-1)
	}
	out := make([][]float64, mels)
	for m := range out {
		out[m] = make([]float64, freqBins)
		enorm := 2 / (edges[m+2] - edges[m])
		for k, f := range fftFreqs {
			down := (f - edges[m]) / (edges[m+1] - edges[m])
			up := (edges[m+2] - f) / (edges[m+2] - edges[m+1])
			out[m][k] = max(0, min(down, up)) * enorm
		}
	}
	return out
}

// The Slaney mel scale: linear below 1 kHz, logarithmic above.
const (
	slaneyMinLogHz  = 1000.0
	slaneyMinLogMel = 15.0
)

var slaneyLogStep = 27.0 / math.Log(6.4)

func hzToMelSlaney(f float64) float64 {
	if f < slaneyMinLogHz {
		return 3 * f / 200
	}
	return slaneyMinLogMel + math.Log(f/slaneyMinLogHz)*slaneyLogStep
}

func melToHzSlaney(m float64) float64 {
	if m < slaneyMinLogMel {
		return 200 * m / 3
	}
	return slaneyMinLogHz * math.Exp((m-slaneyMinLogMel)/slaneyLogStep)
}

// Gemma4Extractor is Gemma4AudioFeatureExtractor (USM-style): 16 kHz
// audio cut at 30 s and zero-padded to a multiple of 128 samples, 160
// zeros in front ("semicausal": the first frame centred at t = 0), frames
// of 320 samples every 160 under a periodic Hann window (products in
// float32, as the reference's float32 arrays make them), a 512-point FFT's
// magnitudes (not power) through HTK-scale mel filters without
// normalization, and log(x + 0.001). A frame counts (Valid) when the last
// sample of its window is audio; the others are zeroed.
type Gemma4Extractor struct {
	Bins    int
	filters [][]float64
	window  []float32
}

// Gemma 4's framing.
const (
	gemmaFrame    = 320
	gemmaHop      = 160
	gemmaFFT      = 512
	gemmaMax      = 480_000
	gemmaMultiple = 128
	gemmaFloor    = 1e-3
)

// NewGemma4Extractor makes the extractor with the reference's defaults
// (128 bins, 0–8000 Hz).
func NewGemma4Extractor() *Gemma4Extractor {
	w := hannPeriodic(gemmaFrame)
	w32 := make([]float32, len(w))
	for i, v := range w {
		w32[i] = float32(v)
	}
	return &Gemma4Extractor{Bins: 128, window: w32,
		filters: melFiltersHTK(gemmaFFT/2+1, 128, 0, 8000, whisperRate)}
}

// Rate is the sampling rate the extractor takes.
func (e *Gemma4Extractor) Rate() int { return whisperRate }

// Extract computes the features of a (already at 16 kHz); cut reports
// whether audio past 30 s was dropped.
func (e *Gemma4Extractor) Extract(a Audio) (f Features, cut bool) {
	n := min(len(a.Samples), gemmaMax)
	padded := (n + gemmaMultiple - 1) / gemmaMultiple * gemmaMultiple
	x := make([]float32, gemmaHop+padded) // 160 zeros in front: frame_length/2
	copy(x[gemmaHop:], a.Samples[:n])
	frames := (len(x)-(gemmaFrame+1))/gemmaHop + 1
	f = Features{Bins: e.Bins, Frames: max(frames, 0)}
	f.Data = make([]float32, f.Frames*e.Bins)
	fft := fourier.NewFFT(gemmaFFT)
	buf := make([]float64, gemmaFFT)
	coef := make([]complex128, gemmaFFT/2+1)
	mag := make([]float64, len(coef))
	for t := range f.Frames {
		// The window's last sample (index t·hop + 320 of x) must be audio.
		if t*gemmaHop+gemmaFrame-gemmaHop >= n {
			continue
		}
		f.Valid = t + 1
		for i := range gemmaFrame {
			buf[i] = float64(x[t*gemmaHop+i] * e.window[i])
		}
		coef = fft.Coefficients(coef, buf)
		for k, c := range coef {
			mag[k] = math.Hypot(real(c), imag(c))
		}
		for m, filt := range e.filters {
			var s float64
			for k, w := range filt {
				s += w * mag[k]
			}
			f.Data[t*e.Bins+m] = float32(math.Log(s + gemmaFloor))
		}
	}
	return f, len(a.Samples) > gemmaMax
}

// melFiltersHTK is mel_filter_bank with norm=None and mel_scale="htk".
func melFiltersHTK(freqBins, mels int, fmin, fmax float64, rate int) [][]float64 {
	toMel := func(f float64) float64 { return 2595 * math.Log10(1+f/700) }
	toHz := func(m float64) float64 { return 700 * (math.Pow(10, m/2595) - 1) }
	lo, hi := toMel(fmin), toMel(fmax)
	edges := make([]float64, mels+2)
	for i := range edges {
		edges[i] = toHz(lo + (hi-lo)*float64(i)/float64(mels+1))
	}
	out := make([][]float64, mels)
	for m := range out {
		out[m] = make([]float64, freqBins)
		for k := range freqBins {
			f := float64(rate/2) * float64(k) / float64(freqBins-1)
			down := (f - edges[m]) / (edges[m+1] - edges[m])
			up := (edges[m+2] - f) / (edges[m+2] - edges[m+1])
			out[m][k] = max(0, min(down, up))
		}
	}
	return out
}
