package media

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// WAVE format codes (the fmt chunk's, or an extensible file's sub-format).
const (
	wavePCM        = 1
	waveFloat      = 3
	waveExtensible = 0xfffe
)

// Bounds on a header's claims: beyond them a file is corrupt or hostile.
const (
	maxWAVRate     = 384_000
	maxWAVChannels = 32
)

// decodeWAV reads a RIFF/WAVE file: PCM of 8, 16, 24 or 32 bits, or IEEE
// float of 32 or 64, any channel count, mixed down to mono by averaging.
func decodeWAV(data []byte, lim AudioLimits) (Audio, error) {
	bad := func(format string, args ...any) (Audio, error) {
		return Audio{}, fmt.Errorf("%w: wav: "+format, append([]any{ErrMedia}, args...)...)
	}
	if !isWAV(data) {
		return bad("not a RIFF/WAVE file")
	}
	var (
		format, channels, bits, align int
		rate                          int
		haveFmt                       bool
	)
	for p := 12; p+8 <= len(data); {
		id := string(data[p : p+4])
		size := int64(binary.LittleEndian.Uint32(data[p+4 : p+8]))
		body := data[p+8:]
		switch id {
		case "fmt ":
			if size < 16 || int64(len(body)) < size {
				return bad("fmt chunk of %d bytes is truncated or too short", size)
			}
			format = int(binary.LittleEndian.Uint16(body[0:2]))
			channels = int(binary.LittleEndian.Uint16(body[2:4]))
			rate = int(binary.LittleEndian.Uint32(body[4:8]))
			align = int(binary.LittleEndian.Uint16(body[12:14]))
			bits = int(binary.LittleEndian.Uint16(body[14:16]))
			if format == waveExtensible {
				if size < 40 {
					return bad("extensible fmt chunk of %d bytes is too short", size)
				}
				format = int(binary.LittleEndian.Uint16(body[24:26])) // the sub-format GUID's first two bytes
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return bad("data before the fmt chunk")
			}
			// Streaming writers leave the size unset (0 or all ones): the
			// data runs to the end of the file. Any other size must fit.
			if size == 0 || size == math.MaxUint32 {
				size = int64(len(body))
			} else if size > int64(len(body)) {
				return bad("truncated: the data chunk says %d bytes, %d are there", size, len(body))
			}
			return wavSamples(body[:size], format, channels, bits, align, rate, lim)
		}
		// Chunks are padded to an even size.
		next := int64(p) + 8 + size + size%2
		if next > int64(len(data)) {
			break
		}
		p = int(next)
	}
	if !haveFmt {
		return bad("no fmt chunk")
	}
	return bad("no data chunk")
}

func wavSamples(body []byte, format, channels, bits, align, rate int, lim AudioLimits) (Audio, error) {
	bad := func(format string, args ...any) (Audio, error) {
		return Audio{}, fmt.Errorf("%w: wav: "+format, append([]any{ErrMedia}, args...)...)
	}
	switch {
	case channels < 1 || channels > maxWAVChannels:
		return bad("%d channels (1 to %d are read)", channels, maxWAVChannels)
	case rate < 1 || rate > maxWAVRate:
		return bad("a sample rate of %d Hz (1 to %d are read)", rate, maxWAVRate)
	}
	width := bits / 8
	switch {
	case format == wavePCM && (bits == 8 || bits == 16 || bits == 24 || bits == 32):
	case format == waveFloat && (bits == 32 || bits == 64):
	default:
		return bad("format %d with %d bits per sample is not read (PCM 8/16/24/32 and float 32/64 are)", format, bits)
	}
	frame := width * channels
	if align != 0 && align != frame {
		return bad("block align %d does not match %d channels of %d bits", align, channels, bits)
	}
	frames := len(body) / frame
	if d := time.Duration(float64(frames) / float64(rate) * float64(time.Second)); d > lim.MaxDuration {
		return bad("%s of sound is over the %s limit", d.Round(time.Second), lim.MaxDuration)
	}
	out := make([]float32, frames)
	for f := range frames {
		var sum float64
		for c := range channels {
			s := body[f*frame+c*width:]
			var v float64
			switch {
			case format == waveFloat && bits == 32:
				v = float64(math.Float32frombits(binary.LittleEndian.Uint32(s)))
			case format == waveFloat:
				v = math.Float64frombits(binary.LittleEndian.Uint64(s))
			case bits == 8:
				v = (float64(s[0]) - 128) / 128 // 8-bit PCM is unsigned
			case bits == 16:
				v = float64(int16(binary.LittleEndian.Uint16(s))) / (1 << 15)
			case bits == 24:
				v = float64(int32(uint32(s[0])<<8|uint32(s[1])<<16|uint32(s[2])<<24)>>8) / (1 << 23)
			default:
				v = float64(int32(binary.LittleEndian.Uint32(s))) / (1 << 31)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("sample %d is not a number", f)
			}
			sum += v
		}
		out[f] = float32(sum / float64(channels))
	}
	return Audio{Rate: rate, Samples: out}, nil
}
