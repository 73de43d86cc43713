// Video through ffmpeg and ffprobe, run as programs: Linux and every
// system but macOS (and macOS without cgo).

//go:build !(darwin && cgo)

package media

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// testHookStarted, when set, runs once ffmpeg's decode has started.
var testHookStarted func()

// ffTools finds ffprobe and ffmpeg on the PATH.
func ffTools() (probe, mpeg string, err error) {
	for _, name := range []string{"ffprobe", "ffmpeg"} {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", "", fmt.Errorf("video: %w: %s is not installed (install ffmpeg, e.g. apt-get install ffmpeg, for video input): %v", ErrNoVideoDecoder, name, err)
		}
		if name == "ffprobe" {
			probe = p
		} else {
			mpeg = p
		}
	}
	return probe, mpeg, nil
}

func decodeVideo(ctx context.Context, path string, opt VideoOptions) ([]Frame, error) {
	ffprobe, ffmpeg, err := ffTools()
	if err != nil {
		return nil, err
	}
	info, err := probeFF(ctx, ffprobe, path)
	if err != nil {
		return nil, err
	}
	idx, err := planVideo(info, opt)
	if err != nil {
		return nil, err
	}
	return decodeFF(ctx, ffmpeg, path, info, idx)
}

// probeArgs asks ffprobe for the first video stream, its packets counted
// (a demux pass, nothing decoded: the count torchcodec's scan makes, and
// the only one WebM and Matroska give).
var probeArgs = []string{
	"-v", "error", "-hide_banner",
	"-select_streams", "v:0", "-count_packets",
	"-show_entries", "format=format_name:stream=codec_type,width,height,avg_frame_rate,r_frame_rate,nb_frames,nb_read_packets,duration" +
		":stream_disposition=attached_pic:stream_side_data=rotation:stream_tags=rotate",
	"-of", "json",
}

// probeFF runs ffprobe on path.
func probeFF(ctx context.Context, ffprobe, path string) (videoInfo, error) {
	cmd := exec.CommandContext(ctx, ffprobe, append(append([]string{}, probeArgs...), "file:"+path)...)
	cmd.WaitDelay = time.Second
	var stdout bytes.Buffer
	stderr := &stderrTail{max: 2048}
	cmd.Stdout = &limitWriter{w: &stdout, n: 1 << 20}
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return videoInfo{}, ctx.Err()
		}
		return videoInfo{}, fmt.Errorf("%w: video: not a video ffprobe can read (%s)", ErrMedia, stderr.message(path))
	}
	return parseProbe(stdout.Bytes())
}

// probeOutput is the part of ffprobe's JSON that parseProbe reads.
type probeOutput struct {
	Format struct {
		FormatName string `json:"format_name"`
	} `json:"format"`
	Streams []struct {
		CodecType     string `json:"codec_type"`
		Width         int    `json:"width"`
		Height        int    `json:"height"`
		AvgFrameRate  string `json:"avg_frame_rate"`
		RFrameRate    string `json:"r_frame_rate"`
		NbFrames      string `json:"nb_frames"`
		NbReadPackets string `json:"nb_read_packets"`
		Duration      string `json:"duration"`
		Disposition   struct {
			AttachedPic int `json:"attached_pic"`
		} `json:"disposition"`
		SideData []struct {
			Rotation *float64 `json:"rotation"`
		} `json:"side_data_list"`
		Tags struct {
			Rotate string `json:"rotate"`
		} `json:"tags"`
	} `json:"streams"`
}

// stillFormats are ffmpeg's demuxers of single pictures: a video stream
// to ffprobe, not a clip.
func stillFormat(name string) bool {
	return name == "image2" || strings.HasSuffix(name, "_pipe")
}

// parseProbe reads ffprobe's JSON for the first video stream: its shown
// size (rotation applied, as ffmpeg's decode applies it), frame count
// and average frame rate. The count is the packets ffprobe read
// (nb_read_packets), as torchcodec's exact seek mode counts frames by
// scanning (transformers' default video decoder), else the header's
// nb_frames (PyAV's stream.frames); the rate is avg_frame_rate (PyAV's
// average_rate; torchcodec's frames over scanned duration is the same
// for a constant-rate clip), else r_frame_rate, else frames over
// duration.
func parseProbe(data []byte) (videoInfo, error) {
	var out probeOutput
	if err := json.Unmarshal(data, &out); err != nil {
		return videoInfo{}, fmt.Errorf("video: ffprobe's output: %w", err)
	}
	if stillFormat(out.Format.FormatName) {
		return videoInfo{}, fmt.Errorf("%w: video: the file is a still image, not a video", ErrMedia)
	}
	if len(out.Streams) == 0 {
		return videoInfo{}, errNoVideo
	}
	s := out.Streams[0]
	if s.CodecType != "video" || s.Disposition.AttachedPic != 0 {
		return videoInfo{}, errNoVideo // a cover picture is not a clip
	}
	const maxSide = 1 << 16
	if s.Width <= 0 || s.Height <= 0 || s.Width > maxSide || s.Height > maxSide {
		return videoInfo{}, fmt.Errorf("%w: video: frame size %d×%d is not valid", ErrMedia, s.Width, s.Height)
	}
	info := videoInfo{Width: s.Width, Height: s.Height}

	rot := 0.0
	for _, sd := range s.SideData {
		if sd.Rotation != nil {
			rot = *sd.Rotation
		}
	}
	if rot == 0 && s.Tags.Rotate != "" { // ffmpeg before 5.0 reported it as a tag
		if r, err := strconv.ParseFloat(s.Tags.Rotate, 64); err == nil {
			rot = r
		}
	}
	if !math.IsNaN(rot) && !math.IsInf(rot, 0) {
		if q := int(math.Round(rot/90)) % 2; q != 0 {
			info.Width, info.Height = info.Height, info.Width
		}
	}

	info.Frames = frameCount(s.NbReadPackets)
	if info.Frames == 0 {
		info.Frames = frameCount(s.NbFrames)
	}
	info.FPS = frameRate(s.AvgFrameRate)
	if info.FPS == 0 {
		info.FPS = frameRate(s.RFrameRate)
	}
	if info.FPS == 0 && info.Frames > 0 {
		if d, err := strconv.ParseFloat(s.Duration, 64); err == nil && d > 0 && float64(info.Frames)/d <= maxFPS {
			info.FPS = float64(info.Frames) / d
		}
	}
	if info.Frames == 0 {
		return videoInfo{}, fmt.Errorf("%w: video: the stream has no frames", ErrMedia)
	}
	if info.FPS == 0 {
		return videoInfo{}, fmt.Errorf("%w: video: the stream has no frame rate", ErrMedia)
	}
	return info, nil
}

// frameCount parses a decimal count; 0 when absent, invalid or absurd.
func frameCount(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > maxStreamFrames {
		return 0
	}
	return n
}

// frameRate parses ffprobe's "num/den" (or a plain number) as a frame
// rate; 0 when absent, invalid or not in (0, maxFPS].
func frameRate(s string) float64 {
	num, den, ok := strings.Cut(s, "/")
	if !ok {
		den = "1"
	}
	n, err1 := strconv.ParseInt(num, 10, 64)
	d, err2 := strconv.ParseInt(den, 10, 64)
	if err1 != nil || err2 != nil || n <= 0 || d <= 0 {
		return 0
	}
	// float(Fraction(n, d)) in Python is n/d correctly rounded; so is this
	// for n, d below 2⁵³.
	r := float64(n) / float64(d)
	if r > maxFPS {
		return 0
	}
	return r
}

// selectExpr is ffmpeg's select filter expression keeping frames idx
// (their decode-order numbers n, counted as PyAV's decode loop counts).
func selectExpr(idx []int) string {
	var b strings.Builder
	b.WriteString("select='")
	last := -1
	for _, i := range idx {
		if i == last {
			continue
		}
		if last >= 0 {
			b.WriteByte('+')
		}
		fmt.Fprintf(&b, "eq(n,%d)", i)
		last = i
	}
	b.WriteString("'")
	return b.String()
}

// decodeFF decodes frames idx (ascending) of path's first video stream
// to RGB. One output frame per selected frame, never a duplicate, takes
// -fps_mode passthrough (ffmpeg 5.1 on; 9 dropped the older -vsync), or
// -vsync passthrough on an ffmpeg older than 5.1.
func decodeFF(ctx context.Context, ffmpeg, path string, info videoInfo, idx []int) ([]Frame, error) {
	frames, err := decodeFFWith(ctx, ffmpeg, path, info, idx, "-fps_mode")
	if errors.Is(err, errOldFFmpeg) {
		frames, err = decodeFFWith(ctx, ffmpeg, path, info, idx, "-vsync")
	}
	return frames, err
}

// errOldFFmpeg is an ffmpeg that knows no -fps_mode.
var errOldFFmpeg = errors.New("ffmpeg before 5.1")

func decodeFFWith(ctx context.Context, ffmpeg, path string, info videoInfo, idx []int, syncFlag string) ([]Frame, error) {
	distinct := 0
	for k, i := range idx {
		if k == 0 || i != idx[k-1] {
			distinct++
		}
	}
	args := []string{
		"-nostdin", "-v", "error", "-hide_banner",
		"-i", "file:" + path,
		"-map", "0:v:0", "-an", "-sn", "-dn",
		"-vf", selectExpr(idx),
		syncFlag, "passthrough",
		"-frames:v", strconv.Itoa(distinct),
		"-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1",
	}
	cmd := exec.CommandContext(ctx, ffmpeg, args...)
	cmd.WaitDelay = time.Second
	stderr := &stderrTail{max: 2048}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("video: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("video: starting ffmpeg: %w", err)
	}
	if testHookStarted != nil {
		testHookStarted()
	}

	size := info.Width * info.Height * 3
	frames := make([]Frame, 0, len(idx))
	var readErr error
	for k, i := range idx {
		if k > 0 && i == idx[k-1] { // the same frame twice: share nothing, copy it
			prev := frames[k-1]
			frames = append(frames, Frame{Image: Image{Width: prev.Width, Height: prev.Height, Pix: append([]uint8(nil), prev.Pix...)}, At: frameAt(i, info.FPS), Index: i, FPS: info.FPS})
			continue
		}
		pix := make([]uint8, size)
		if _, err := io.ReadFull(stdout, pix); err != nil {
			readErr = err
			break
		}
		frames = append(frames, Frame{Image: Image{Width: info.Width, Height: info.Height, Pix: pix}, At: frameAt(i, info.FPS), Index: i, FPS: info.FPS})
	}
	// Nothing may follow the last frame: frames of another size than the
	// header's would show here. ffmpeg is stopped rather than drained.
	extra := false
	if readErr == nil {
		var one [1]byte
		if n, _ := io.ReadFull(stdout, one[:]); n > 0 {
			extra = true
			cmd.Process.Kill()
		}
	}
	waitErr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case extra:
		return nil, fmt.Errorf("%w: video: decoded frames are not the %d×%d the header gives", ErrMedia, info.Width, info.Height)
	case waitErr != nil && syncFlag == "-fps_mode" && strings.Contains(string(stderr.buf), "fps_mode"):
		return nil, errOldFFmpeg
	case waitErr != nil:
		return nil, fmt.Errorf("%w: video: ffmpeg could not decode the file (%s)", ErrMedia, stderr.message(path))
	case readErr != nil:
		return nil, fmt.Errorf("%w: video: the file ends early: %d of the %d sampled frames decoded (of %d frames its header lists)", ErrMedia, len(frames), len(idx), info.Frames)
	}
	return frames, nil
}

// stderrTail keeps the last max bytes written: a tool's stderr.
type stderrTail struct {
	max int
	buf []byte
}

func (t *stderrTail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// message is the tool's last error line, the temporary file's name
// taken out.
func (t *stderrTail) message(path string) string {
	s := strings.TrimSpace(string(t.buf))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	s = strings.ReplaceAll(s, "file:"+path, "the file")
	s = strings.ReplaceAll(s, path, "the file")
	if s == "" {
		return "no message"
	}
	return s
}

// limitWriter passes on at most n bytes and fails past them.
type limitWriter struct {
	w io.Writer
	n int64
}

var errOutputLimit = errors.New("output over its limit")

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, errOutputLimit
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// videoDecoder names this build's decoder.
const videoDecoder = "ffmpeg"
