package media

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// Audio is decoded sound: mono float32 samples in [-1, 1] at Rate.
type Audio struct {
	Rate    int
	Samples []float32
}

// Duration is how long the audio plays.
func (a Audio) Duration() time.Duration {
	if a.Rate <= 0 {
		return 0
	}
	return time.Duration(float64(len(a.Samples)) / float64(a.Rate) * float64(time.Second))
}

// AudioLimits bound one audio decode. Zero fields take the defaults.
type AudioLimits struct {
	MaxBytes    int64         // encoded size
	MaxDuration time.Duration // decoded length
}

// Default audio limits: a 25 MB file (OpenAI's transcription limit), ten
// minutes of sound.
const (
	DefaultAudioBytes    = 25 << 20
	DefaultAudioDuration = 10 * time.Minute
)

func (l AudioLimits) withDefaults() AudioLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultAudioBytes
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = DefaultAudioDuration
	}
	return l
}

// DecodeAudio decodes an audio file, chosen by its content, never its
// name: RIFF/WAVE here, every other container (MP3, M4A, OGG, FLAC, WebM…)
// through the platform's transcoder (transcode_*.go). Channels are mixed
// down to mono by averaging, as the reference pipelines do.
func DecodeAudio(ctx context.Context, data []byte, lim AudioLimits) (Audio, error) {
	lim = lim.withDefaults()
	if int64(len(data)) > lim.MaxBytes {
		return Audio{}, fmt.Errorf("%w: audio: %d bytes is over the %d-byte limit", ErrMedia, len(data), lim.MaxBytes)
	}
	if len(data) == 0 {
		return Audio{}, fmt.Errorf("%w: audio: the file is empty", ErrMedia)
	}
	if isWAV(data) {
		return decodeWAV(data, lim)
	}
	if !maybeAudio(data) {
		return Audio{}, fmt.Errorf("%w: audio: not an audio file Hearth can read (WAV, MP3, M4A, OGG, FLAC, WebM)", ErrMedia)
	}
	wav, err := transcode(ctx, data, lim)
	if err != nil {
		return Audio{}, err
	}
	return decodeWAV(wav, lim)
}

func isWAV(data []byte) bool {
	return len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WAVE"
}

// maybeAudio recognizes the containers worth handing to the transcoder by
// their signatures, so that arbitrary bytes never reach a subprocess.
func maybeAudio(data []byte) bool {
	switch {
	case len(data) < 12:
		return false
	case bytes.HasPrefix(data, []byte("ID3")), data[0] == 0xff && data[1]&0xe0 == 0xe0: // MP3
		return true
	case bytes.HasPrefix(data, []byte("OggS")), bytes.HasPrefix(data, []byte("fLaC")):
		return true
	case bytes.HasPrefix(data, []byte{0x1a, 0x45, 0xdf, 0xa3}): // Matroska/WebM
		return true
	case string(data[4:8]) == "ftyp": // MP4/M4A/MOV
		return true
	case bytes.HasPrefix(data, []byte("FORM")) && (string(data[8:12]) == "AIFF" || string(data[8:12]) == "AIFC"):
		return true
	case bytes.HasPrefix(data, []byte("#!AMR")), bytes.HasPrefix(data, []byte("caff")):
		return true
	}
	return false
}
