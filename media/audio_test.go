package media

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth/internal/testenv"
)

// makeWAV writes a RIFF/WAVE file of frames×channels samples given by
// sample(frame, channel) in [-1, 1].
func makeWAV(format, bits, channels, rate, frames int, sample func(f, c int) float64) []byte {
	var data bytes.Buffer
	for f := range frames {
		for c := range channels {
			v := sample(f, c)
			switch {
			case format == waveFloat && bits == 32:
				binary.Write(&data, binary.LittleEndian, float32(v))
			case format == waveFloat:
				binary.Write(&data, binary.LittleEndian, v)
			case bits == 8:
				data.WriteByte(byte(int(math.Round(v*127)) + 128))
			case bits == 16:
				binary.Write(&data, binary.LittleEndian, int16(math.Round(v*32767)))
			case bits == 24:
				x := int32(math.Round(v * 8388607))
				data.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16)})
			default:
				binary.Write(&data, binary.LittleEndian, int32(math.Round(v*2147483647)))
			}
		}
	}
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+data.Len()))
	b.WriteString("WAVEfmt ")
	binary.Write(&b, binary.LittleEndian, uint32(16))
	binary.Write(&b, binary.LittleEndian, uint16(format))
	binary.Write(&b, binary.LittleEndian, uint16(channels))
	binary.Write(&b, binary.LittleEndian, uint32(rate))
	binary.Write(&b, binary.LittleEndian, uint32(rate*channels*bits/8))
	binary.Write(&b, binary.LittleEndian, uint16(channels*bits/8))
	binary.Write(&b, binary.LittleEndian, uint16(bits))
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(data.Len()))
	b.Write(data.Bytes())
	return b.Bytes()
}

func tone(f, c int) float64 { return 0.5 * math.Sin(float64(f)*0.05+float64(c)) }

func TestDecodeWAV(t *testing.T) {
	for _, tc := range []struct {
		format, bits int
		tol          float64
	}{{wavePCM, 8, 1.0 / 100}, {wavePCM, 16, 1e-4}, {wavePCM, 24, 1e-6}, {wavePCM, 32, 1e-7}, {waveFloat, 32, 1e-7}, {waveFloat, 64, 1e-7}} {
		for _, ch := range []int{1, 2, 6} {
			data := makeWAV(tc.format, tc.bits, ch, 22050, 1000, tone)
			a, err := DecodeAudio(context.Background(), data, AudioLimits{})
			if err != nil {
				t.Fatalf("format %d, %d bits, %d channels: %v", tc.format, tc.bits, ch, err)
			}
			if a.Rate != 22050 || len(a.Samples) != 1000 {
				t.Fatalf("rate %d, %d samples", a.Rate, len(a.Samples))
			}
			for f, got := range a.Samples {
				var want float64
				for c := range ch {
					want += tone(f, c)
				}
				want /= float64(ch)
				if math.Abs(float64(got)-want) > tc.tol {
					t.Fatalf("format %d, %d bits, %d channels: sample %d = %v, want %v", tc.format, tc.bits, ch, f, got, want)
				}
			}
		}
	}
}

func TestDecodeWAVErrors(t *testing.T) {
	good := makeWAV(wavePCM, 16, 1, 16000, 100, tone)
	set := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	set16 := func(off int, v uint16) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint16(b[off:], v)
		return b
	}
	nan := makeWAV(waveFloat, 32, 1, 16000, 4, func(f, c int) float64 {
		if f == 2 {
			return math.NaN()
		}
		return 0
	})
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"not audio", []byte("hello, this is plainly text and not a sound"), "not an audio file"},
		{"truncated", good[:len(good)-50], "truncated"},
		{"no data", good[:36], "no data chunk"},
		{"zero channels", set16(22, 0), "0 channels"},
		{"many channels", set16(22, 1000), "1000 channels"},
		{"zero rate", set(24, 0), "sample rate of 0"},
		{"absurd rate", set(24, 4_000_000_000), "sample rate"},
		{"bits", set16(34, 12), "12 bits"},
		{"format", set16(20, 2), "format 2"},
		{"align", set16(32, 7), "block align"},
		{"nan", nan, "not a number"},
		{"too long", makeWAV(wavePCM, 8, 1, 8000, 8000*3, tone), "over the 2s limit"},
	} {
		_, err := DecodeAudio(context.Background(), tc.data, AudioLimits{MaxDuration: 2 * time.Second})
		if !errors.Is(err, ErrMedia) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a media error containing %q", tc.name, err, tc.want)
		}
	}
	// A streaming writer's unset size reads to the end.
	b := set(40, 0xffffffff)
	if a, err := DecodeAudio(context.Background(), b, AudioLimits{}); err != nil || len(a.Samples) != 100 {
		t.Errorf("streaming size: %d samples, %v", len(a.Samples), err)
	}
}

// TestTranscode decodes MP3, OGG/Vorbis, FLAC and M4A that ffmpeg makes
// from a WAV, and checks the sound came through.
func TestTranscode(t *testing.T) {
	_, err := exec.LookPath("ffmpeg")
	testenv.Need(t, "ffmpeg", err == nil)
	dir := t.TempDir()
	src := filepath.Join(dir, "in.wav")
	if err := os.WriteFile(src, makeWAV(wavePCM, 16, 2, 44100, 44100, tone), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"mp3", "ogg", "flac", "m4a", "webm"} {
		out := filepath.Join(dir, "out."+ext)
		if b, err := exec.Command("ffmpeg", "-loglevel", "error", "-i", src, out).CombinedOutput(); err != nil {
			t.Logf("ffmpeg cannot write %s here (%v: %s); skipped", ext, err, b)
			continue
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		a, err := DecodeAudio(context.Background(), data, AudioLimits{})
		if err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		if a.Rate != 44100 && a.Rate != 48000 || a.Duration() < 900*time.Millisecond || a.Duration() > 1100*time.Millisecond {
			t.Errorf("%s: %d Hz, %v", ext, a.Rate, a.Duration())
		}
		var energy float64
		for _, s := range a.Samples {
			energy += float64(s) * float64(s)
		}
		if rms := math.Sqrt(energy / float64(len(a.Samples))); rms < 0.2 || rms > 0.5 {
			t.Errorf("%s: rms %.3f, want about 0.35", ext, rms)
		}
	}
	// A container with no audio stream, and bytes that only look like one.
	video := filepath.Join(dir, "v.mp4")
	if err := exec.Command("ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=duration=1:size=32x32:rate=5", video).Run(); err == nil {
		data, _ := os.ReadFile(video)
		if _, err := DecodeAudio(context.Background(), data, AudioLimits{}); !errors.Is(err, ErrMedia) {
			t.Errorf("video without audio: %v", err)
		}
	}
	fake := append([]byte("ID3\x04\x00\x00\x00\x00\x00\x00"), bytes.Repeat([]byte{0x55}, 500)...)
	if _, err := DecodeAudio(context.Background(), fake, AudioLimits{}); !errors.Is(err, ErrMedia) {
		t.Errorf("fake mp3: %v", err)
	}
}

func FuzzDecodeWAV(f *testing.F) {
	f.Add(makeWAV(wavePCM, 16, 2, 16000, 20, tone))
	f.Add(makeWAV(waveFloat, 32, 1, 8000, 10, tone))
	f.Add(makeWAV(wavePCM, 24, 3, 48000, 5, tone))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !isWAV(data) {
			return
		}
		a, err := decodeWAV(data, AudioLimits{MaxDuration: time.Minute, MaxBytes: 1 << 20})
		if err != nil {
			if !errors.Is(err, ErrMedia) {
				t.Fatalf("not a media error: %v", err)
			}
			return
		}
		if a.Rate < 1 || a.Rate > maxWAVRate {
			t.Fatalf("rate %d", a.Rate)
		}
	})
}
