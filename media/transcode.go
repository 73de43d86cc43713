package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// transcodeTimeout bounds one transcode, whatever the request's context.
const transcodeTimeout = 2 * time.Minute

// ErrNoTranscoder is the server's fault, not the input's: the platform's
// transcoder is missing.
var ErrNoTranscoder = errors.New("no audio transcoder")

// ffmpegWAV decodes any container ffmpeg reads into a mono float32 WAV at
// the file's own rate (resampling is ours: audio_resample.go). The input
// goes through a temporary file, since MP4 and M4A may need seeking. The
// process dies with ctx, and its output is bounded by the duration limit.
func ffmpegWAV(ctx context.Context, data []byte, lim AudioLimits) ([]byte, error) {
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		return nil, fmt.Errorf("%w: install ffmpeg to decode audio other than WAV", ErrNoTranscoder)
	}
	in, err := os.CreateTemp("", "hearth-audio-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(in.Name())
	if _, err := in.Write(data); err != nil {
		in.Close()
		return nil, err
	}
	if err := in.Close(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, transcodeTimeout)
	defer cancel()
	// One second past the limit, so that decodeWAV sees the excess and
	// says so instead of silently cutting.
	limit := strconv.FormatFloat(lim.MaxDuration.Seconds()+1, 'f', 3, 64)
	cmd := exec.CommandContext(ctx, bin, "-nostdin", "-hide_banner", "-loglevel", "error",
		"-i", in.Name(), "-vn", "-sn", "-dn", "-t", limit, "-ac", "1", "-c:a", "pcm_f32le", "-f", "wav", "pipe:1")
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// At most MaxDuration+1 s of mono float32 at the highest rate read.
	most := int64((lim.MaxDuration.Seconds()+2)*maxWAVRate*4) + 1<<16
	wav, readErr := io.ReadAll(io.LimitReader(out, most))
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("audio: decoding stopped: %w", context.Cause(ctx))
	case waitErr != nil || readErr != nil:
		msg := firstLine(stderr.String())
		if msg == "" {
			msg = fmt.Sprint(errors.Join(waitErr, readErr))
		}
		return nil, fmt.Errorf("%w: audio: the file could not be decoded (%s)", ErrMedia, msg)
	case len(wav) == 0:
		return nil, fmt.Errorf("%w: audio: the file holds no audio stream", ErrMedia)
	}
	return wav, nil
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
