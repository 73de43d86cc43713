//go:build darwin

package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// transcode turns a non-WAV audio file into a WAV: macOS's afconvert
// (Core Audio: MP3, M4A/AAC/ALAC, AIFF, CAF, FLAC), else ffmpeg when
// installed (OGG, WebM). Not yet run on a Mac: docs/macos.md.
func transcode(ctx context.Context, data []byte, lim AudioLimits) ([]byte, error) {
	wav, err := afconvertWAV(ctx, data)
	if err == nil {
		return wav, nil
	}
	if _, lookErr := exec.LookPath("ffmpeg"); lookErr == nil {
		return ffmpegWAV(ctx, data, lim)
	}
	return nil, err
}

func afconvertWAV(ctx context.Context, data []byte) ([]byte, error) {
	dir, err := os.MkdirTemp("", "hearth-audio-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out.wav")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, transcodeTimeout)
	defer cancel()
	// Little-endian float32, one channel, at the file's own rate.
	cmd := exec.CommandContext(ctx, "/usr/bin/afconvert", "-f", "WAVE", "-d", "LEF32", "-c", "1", in, out)
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("audio: decoding stopped: %w", context.Cause(ctx))
		}
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return nil, fmt.Errorf("%w: afconvert: %v", ErrNoTranscoder, err)
		}
		return nil, fmt.Errorf("%w: audio: the file could not be decoded (%s)", ErrMedia, firstLine(stderr.String()))
	}
	return os.ReadFile(out)
}
