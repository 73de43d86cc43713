//go:build !darwin

package media

import "context"

// transcode turns a non-WAV audio file into a WAV: ffmpeg off macOS.
func transcode(ctx context.Context, data []byte, lim AudioLimits) ([]byte, error) {
	return ffmpegWAV(ctx, data, lim)
}
