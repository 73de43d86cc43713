package media

import (
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The audio goldens: clips tools/oracle/make_audio_goldens.py synthesized
// and what torchaudio and transformers 5.17 made of them.
const audioDir = "../testdata/media/audio"

type audioGolden struct {
	Clips map[string]struct {
		Rate      int `json:"rate"`
		Resampled int `json:"resampled"`
		Whisper80 struct {
			Shape []int `json:"shape"`
			Valid int   `json:"valid"`
		} `json:"whisper80"`
		Gemma4 struct {
			Mask struct {
				Valid int `json:"valid"`
			} `json:"input_features_mask"`
			Features struct {
				Shape []int `json:"shape"`
			} `json:"input_features"`
		} `json:"gemma4"`
	} `json:"clips"`
}

func readF32(t *testing.T, name string) []float32 {
	t.Helper()
	f, err := os.Open(filepath.Join(audioDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// whisperTorchTol is how far Whisper's features may be from the reference
// as a machine with torch computes them: torch.stft in float32, whose
// rounding moves the log-mel values of low-energy bins by up to 5e-5. Its
// numpy path (float64 FFT) is the exact value, which ours matches within
// 1e-5.
const whisperTorchTol = 1e-4

// TestAudioGoldens holds decoding, resampling and both feature extractors
// to the reference on every committed clip: torchaudio's resample within
// 2e-6, Whisper's (numpy path) and Gemma 4's log-mel features within
// 1e-5.
func TestAudioGoldens(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(audioDir, "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g audioGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	whisper80, whisper128, gemma := NewWhisperExtractor(80, 480000), NewWhisperExtractor(128, 480000), NewGemma4Extractor()
	for name, c := range g.Clips {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(audioDir, name+".wav"))
			if err != nil {
				t.Fatal(err)
			}
			a, err := DecodeAudio(context.Background(), data, AudioLimits{})
			if err != nil {
				t.Fatal(err)
			}
			a16 := Resample(a, 16000)
			if len(a16.Samples) != c.Resampled {
				t.Fatalf("%d samples at 16 kHz, want %d", len(a16.Samples), c.Resampled)
			}
			if c.Rate != 16000 {
				ref := readF32(t, name+".resampled.f32.gz")
				if d := maxDiff(a16.Samples, ref); d > 2e-6 {
					t.Errorf("resampled: max diff %.2g", d)
				}
				// The extractors get the reference's input: a log-mel
				// value of a near-silent frame moves by far more than the
				// resamplers' 1e-6 difference.
				a16.Samples = ref
			}
			check := func(what string, f Features, want []float32, valid int, tol float64) {
				t.Helper()
				if len(f.Data) != len(want) || f.Valid != valid {
					t.Fatalf("%s: %d values, %d valid frames; want %d, %d", what, len(f.Data), f.Valid, len(want), valid)
				}
				if d := maxDiff(f.Data, want); d > tol {
					t.Errorf("%s: max diff %.2g", what, d)
				} else {
					t.Logf("%s: max diff %.2g", what, d)
				}
			}
			f, _ := whisper80.Extract(a16)
			check("whisper80", f, readF32(t, name+".whisper80np.f32.gz"), c.Whisper80.Valid, 1e-5)
			check("whisper80, torch", f, readF32(t, name+".whisper80.f32.gz"), c.Whisper80.Valid, whisperTorchTol)
			if _, err := os.Stat(filepath.Join(audioDir, name+".whisper128.f32.gz")); err == nil {
				f, _ := whisper128.Extract(a16)
				check("whisper128", f, readF32(t, name+".whisper128np.f32.gz"), c.Whisper80.Valid, 1e-5)
				check("whisper128, torch", f, readF32(t, name+".whisper128.f32.gz"), c.Whisper80.Valid, whisperTorchTol)
			}
			f, _ = gemma.Extract(a16)
			check("gemma4", f, readF32(t, name+".gemma4.input_features.f32.gz"), c.Gemma4.Mask.Valid, 1e-5)
		})
	}
}
