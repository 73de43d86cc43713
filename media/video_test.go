package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hearth/internal/testenv"
)

// The sampling goldens below were computed by hand from transformers
// 5.17's code (models/qwen3_vl/video_processing_qwen3_vl.py and
// models/qwen2_vl/video_processing_qwen2_vl.py, sample_frames; quoted in
// video.go), in Python with numpy's linspace and torch.arange written out
// (float32 values through struct), and checked against the half-to-even
// and truncation cases they are chosen for.
var samplingGoldens = []struct {
	total         int
	videoFPS, fps float64
	maxFrames     int
	qwen3, qwen2  []int
	qwen2TooShort bool
	why           string
}{
	{32, 10, 2, 768, []int{0, 6, 12, 19, 25, 31}, []int{0, 5, 10, 16, 21, 26}, false,
		"the 3.2 s test clip: int(6.4) = 6 frames; linspace step 6.2 (18.6 → 19); arange step 16/3 (3·step = 16 exactly)"},
	{32, 10, 2, 3, []int{0, 16, 31}, []int{0, 16}, false,
		"capped at 3: linspace step 15.5 rounds half to even (16); Qwen2 caps at an even 2"},
	{10, 30, 2, 768, []int{0, 3, 6, 9}, []int{0, 2, 5, 7}, false,
		"0.67 frames wanted: raised to min_frames 4; arange step 2.5 truncates"},
	{3, 30, 2, 768, []int{0, 1, 2}, []int{0, 1}, false,
		"shorter than min_frames: all 3; Qwen2 floors to 2"},
	{1, 30, 2, 768, []int{0}, nil, true,
		"one frame: Qwen3 keeps it; Qwen2's max_frames floors to 0 and the reference divides by zero"},
	{300, 30000.0 / 1001, 2, 768,
		[]int{0, 16, 31, 47, 63, 79, 94, 110, 126, 142, 157, 173, 189, 205, 220, 236, 252, 268, 283, 299},
		[]int{0, 15, 30, 45, 60, 75, 90, 105, 120, 135, 150, 165, 180, 195, 210, 225, 240, 255, 270, 285}, false,
		"10 s of NTSC 29.97: 20.02 frames wanted"},
	{8, 8, 5, 768, []int{0, 2, 4, 5, 7}, []int{0, 2, 4, 6}, false,
		"linspace step 1.75: 3.5 rounds to 4 (even)"},
	{6, 6, 5, 768, []int{0, 1, 2, 4, 5}, []int{0, 1, 3, 4}, false,
		"linspace step 1.25: 2.5 rounds to 2 (even)"},
	{97, 24, 2, 768, []int{0, 14, 27, 41, 55, 69, 82, 96}, []int{0, 12, 24, 36, 48, 60, 72, 84}, false,
		"97 frames at 24 fps: 8.08 wanted"},
	{17, 1, 14.0 / 17, 768, []int{0, 1, 2, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16}, []int{0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 12, 13, 14, 15}, false,
		"14 of 17 frames: torch.arange(0, 17, 17/14) has 15 values, the last 17.0 past the clip"},
}

func TestSampleGoldens(t *testing.T) {
	for _, g := range samplingGoldens {
		name := fmt.Sprintf("%d@%g→%g/max%d", g.total, g.videoFPS, g.fps, g.maxFrames)
		if got := sampleIndices(SampleQwen3VL, g.total, g.videoFPS, g.fps, g.maxFrames); !slices.Equal(got, g.qwen3) {
			t.Errorf("Qwen3-VL %s (%s): %v, want %v", name, g.why, got, g.qwen3)
		}
		got := sampleIndices(SampleQwen2VL, g.total, g.videoFPS, g.fps, g.maxFrames)
		if g.qwen2TooShort {
			if len(got) != 0 {
				t.Errorf("Qwen2-VL %s (%s): %v, want none", name, g.why, got)
			}
		} else if !slices.Equal(got, g.qwen2) {
			t.Errorf("Qwen2-VL %s (%s): %v, want %v", name, g.why, got, g.qwen2)
		}
	}
}

// TestSampleLongClipCapped: a minute at 30 fps wants 120 frames at 2 fps;
// the default cap keeps 64, spread over the whole minute (linspace), not
// the first 32 seconds.
func TestSampleLongClipCapped(t *testing.T) {
	got := sampleIndices(SampleQwen3VL, 1800, 30, 2, DefaultMaxFrames)
	if len(got) != 64 || got[0] != 0 || got[63] != 1799 || got[1] != 29 || got[32] != 914 {
		t.Errorf("Qwen3-VL 1800@30 capped at 64: %v", got)
	}
	got = sampleIndices(SampleQwen2VL, 1800, 30, 2, DefaultMaxFrames)
	if len(got) != 64 || got[0] != 0 || got[63] != 1771 || got[8] != 225 {
		t.Errorf("Qwen2-VL 1800@30 capped at 64: %v", got)
	}
	// The reference's own max_frames (768) holds whatever the caller asks.
	if got := sampleIndices(SampleQwen3VL, 100000, 30, 30, 1<<20); len(got) != refMaxFrames {
		t.Errorf("Qwen3-VL uncapped: %d frames, want the reference's 768", len(got))
	}
}

// TestSampleQwen2VLLanes checks the claim in sampleQwen2VL's comment:
// torch.arange's vectorized CPU loop (ATen's vectorized_loop: blocks of
// 2·Vec::size() values, each Vec::size() lanes from a float32 base,
// base + k·step in double, then float32; the tail scalar) truncates to
// the same indices as the scalar rule for every clip up to 2,000 frames,
// with AVX2's 8 lanes and AVX-512's 16.
func TestSampleQwen2VLLanes(t *testing.T) {
	for _, lanes := range []int{8, 16} {
		for total := 2; total <= 2000; total++ {
			for n := 2; n <= min(total, refMaxFrames); n += 2 {
				step := float64(total) / float64(n)
				count := int(math.Ceil(float64(total) / step))
				i := 0
				for ; i <= count-2*lanes; i += 2 * lanes {
					for half := 0; half < 2; half++ {
						base := float32(step * float64(i+half*lanes))
						for k := 0; k < lanes; k++ {
							j := i + half*lanes + k
							vec := int(float32(float64(base) + float64(k)*step))
							if scalar := int(float32(step * float64(j))); vec != scalar {
								t.Fatalf("%d lanes, %d frames, %d wanted: value %d is %d vectorized, %d scalar", lanes, total, n, j, vec, scalar)
							}
						}
					}
				}
			}
		}
	}
}

// checkSampling is what every sampled list must satisfy.
func checkSampling(t *testing.T, r Sampling, total int, videoFPS, fps float64, maxFrames int, idx []int) {
	t.Helper()
	for k, i := range idx {
		if i < 0 || i >= total || (k > 0 && i <= idx[k-1]) {
			t.Fatalf("rule %d, %d frames at %g, %g fps, max %d: indices %v not ascending in [0, %d)", r, total, videoFPS, fps, maxFrames, idx, total)
		}
	}
	if len(idx) > min(maxFrames, refMaxFrames, total) && !(r == SampleQwen3VL && len(idx) <= min(refMinFrames, total)) {
		t.Fatalf("rule %d, %d frames at %g, %g fps, max %d: %d indices", r, total, videoFPS, fps, maxFrames, len(idx))
	}
	if r == SampleQwen2VL && len(idx)%refTemporalPatchSize != 0 {
		t.Fatalf("Qwen2-VL, %d frames at %g, %g fps, max %d: %d indices, not whole temporal patches", total, videoFPS, fps, maxFrames, len(idx))
	}
	if r == SampleQwen3VL && total > 0 && maxFrames > 0 && (len(idx) == 0 || idx[0] != 0 || (len(idx) > 1 && idx[len(idx)-1] != total-1)) {
		t.Fatalf("Qwen3-VL, %d frames at %g, %g fps, max %d: %v does not span the clip", total, videoFPS, fps, maxFrames, idx)
	}
}

// FuzzVideoSample checks the sampling rules' invariants: indices ascend,
// lie in the clip, respect the caps, and Qwen2-VL's come in whole
// temporal patches.
func FuzzVideoSample(f *testing.F) {
	for _, g := range samplingGoldens {
		f.Add(g.total, g.videoFPS, g.fps, g.maxFrames)
	}
	f.Fuzz(func(t *testing.T, total int, videoFPS, fps float64, maxFrames int) {
		if total <= 0 || total > maxStreamFrames || !(videoFPS > 0) || videoFPS > 1e6 || !(fps > 0) || math.IsInf(fps, 0) || maxFrames <= 0 {
			return // planVideo and VideoFrames refuse these before sampling
		}
		for _, r := range []Sampling{SampleQwen3VL, SampleQwen2VL} {
			checkSampling(t, r, total, videoFPS, fps, maxFrames, sampleIndices(r, total, videoFPS, fps, maxFrames))
		}
	})
}

func TestVideoExt(t *testing.T) {
	for _, c := range []struct {
		data []byte
		want string
	}{
		{[]byte("\x00\x00\x00\x20ftypisom\x00\x00\x02\x00"), ".mp4"},
		{[]byte("\x00\x00\x00\x14ftypqt  \x00\x00\x02\x00"), ".mov"},
		{[]byte("\x00\x00\x00\x14ftyp3gp4\x00\x00\x02\x00"), ".3gp"},
		{[]byte("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm"), ".webm"},
		{[]byte("\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x88matroska"), ".mkv"},
		{[]byte("RIFF\x00\x00\x00\x00AVI LIST"), ".avi"},
		{[]byte("hello"), ""},
	} {
		if got := videoExt(c.data); got != c.want {
			t.Errorf("videoExt(%q) = %q, want %q", c.data, got, c.want)
		}
	}
}

func TestVideoFramesOptions(t *testing.T) {
	ctx := context.Background()
	for _, opt := range []VideoOptions{{FPS: -1}, {FPS: math.NaN()}, {FPS: math.Inf(1)}, {Sampling: 7}} {
		if _, err := VideoFrames(ctx, []byte("x"), opt); err == nil || errors.Is(err, ErrMedia) {
			t.Errorf("options %+v: %v, want a caller error (not ErrMedia)", opt, err)
		}
	}
	if _, err := VideoFrames(ctx, nil, VideoOptions{}); !errors.Is(err, ErrMedia) {
		t.Errorf("empty file: %v, want ErrMedia", err)
	}
	if _, err := VideoFrames(ctx, make([]byte, 101), VideoOptions{MaxBytes: 100}); !errors.Is(err, ErrMedia) || !strings.Contains(err.Error(), "100-byte limit") {
		t.Errorf("101 bytes over a 100-byte limit: %v, want ErrMedia", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := VideoFrames(cancelled, []byte("x"), VideoOptions{}); !errors.Is(err, context.Canceled) || errors.Is(err, ErrMedia) {
		t.Errorf("cancelled context: %v, want context.Canceled", err)
	}
}

// The clips below are made at test time with ffmpeg.

// needVideoFFmpeg skips (or fails under HEARTH_REQUIRE_ALL=1) without ffmpeg,
// which makes the clips, and returns its path.
func needVideoFFmpeg(t *testing.T) string {
	t.Helper()
	_, errProbe := exec.LookPath("ffprobe")
	p, err := exec.LookPath("ffmpeg")
	testenv.Need(t, "ffmpeg and ffprobe (Debian package ffmpeg)", err == nil && errProbe == nil)
	return p
}

// hasVideoEncoder reports whether ffmpeg lists the encoder.
func hasVideoEncoder(t *testing.T, ffmpeg, name string) bool {
	t.Helper()
	out, err := exec.Command(ffmpeg, "-hide_banner", "-encoders").Output()
	if err != nil {
		t.Fatalf("ffmpeg -encoders: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[1] == name {
			return true
		}
	}
	return false
}

// makeClip runs ffmpeg with args, the last of them the file it writes,
// and returns that file; stdin, when not nil, is its input.
func makeClip(t *testing.T, ffmpeg string, stdin []byte, args ...string) []byte {
	t.Helper()
	out := args[len(args)-1]
	cmd := exec.Command(ffmpeg, append([]string{"-nostdin", "-v", "error", "-y"}, args...)...)
	if stdin != nil {
		cmd.Args = slices.DeleteFunc(cmd.Args, func(s string) bool { return s == "-nostdin" })
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %v: %v\n%s", args, err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// clipCodec is one way of encoding the test clips.
type clipCodec struct {
	name, ext string
	args      []string // encoder arguments
}

// clipCodecs are the encoders this ffmpeg has, of H.264 (4:4:4: the
// clips are 97×61, odd sizes 4:2:0 H.264 refuses), MPEG-4 part 2 and VP9.
func clipCodecs(t *testing.T, ffmpeg string) []clipCodec {
	var cs []clipCodec
	if hasVideoEncoder(t, ffmpeg, "libx264") {
		cs = append(cs, clipCodec{"h264", ".mp4", []string{"-c:v", "libx264", "-pix_fmt", "yuv444p", "-qp", "0"}})
	}
	cs = append(cs, clipCodec{"mpeg4", ".mp4", []string{"-c:v", "mpeg4", "-q:v", "1"}})
	if hasVideoEncoder(t, ffmpeg, "libvpx-vp9") && videoDecoder == "ffmpeg" { // AVFoundation reads no WebM
		cs = append(cs, clipCodec{"vp9", ".webm", []string{"-c:v", "libvpx-vp9", "-lossless", "1"}})
	}
	return cs
}

// testsrcClip is ffmpeg's testsrc pattern: 3.2 s at 10 fps, 97×61.
func testsrcClip(t *testing.T, ffmpeg string, c clipCodec, extra ...string) []byte {
	out := filepath.Join(t.TempDir(), "testsrc"+c.ext)
	args := append([]string{"-f", "lavfi", "-i", "testsrc=d=3.2:s=97x61:r=10"}, c.args...)
	args = append(append(args, extra...), out)
	return makeClip(t, ffmpeg, nil, args...)
}

// colourOf is test clip frame k's colour: each frame its own, so that a
// decoded frame names its index.
func colourOf(k int) [3]int { return [3]int{10 + 7*k, 245 - 7*k, 40 + 160*(k%2)} }

// colourClip is a clip whose frame k is all colourOf(k): frames frames at
// 10 fps, 97×61.
func colourClip(t *testing.T, ffmpeg string, c clipCodec, frames int) []byte {
	const w, h = 97, 61
	raw := make([]byte, 0, frames*w*h*3)
	for k := range frames {
		col := colourOf(k)
		for range w * h {
			raw = append(raw, byte(col[0]), byte(col[1]), byte(col[2]))
		}
	}
	out := filepath.Join(t.TempDir(), "colours"+c.ext)
	args := append([]string{"-f", "rawvideo", "-pix_fmt", "rgb24", "-s", fmt.Sprintf("%dx%d", w, h), "-r", "10", "-i", "pipe:0"}, c.args...)
	return makeClip(t, ffmpeg, raw, append(args, out)...)
}

// frameIndex names the colour clip frame f shows, or -1.
func frameIndex(f Frame) int {
	var sum [3]int
	n := f.Width * f.Height
	for p := 0; p < n; p++ {
		for c := range 3 {
			sum[c] += int(f.Pix[3*p+c])
		}
	}
	mean := [3]int{(sum[0] + n/2) / n, (sum[1] + n/2) / n, (sum[2] + n/2) / n}
	k := int(math.Round(float64(mean[0]-10) / 7))
	want := colourOf(k)
	for c := range 3 {
		if d := mean[c] - want[c]; d < -3 || d > 3 {
			return -1
		}
	}
	return k
}

func wantTimes(idx []int, fps float64) []time.Duration {
	var ts []time.Duration
	for _, i := range idx {
		ts = append(ts, time.Duration(math.Round(float64(i)/fps*1e9)))
	}
	return ts
}

func frameTimes(frames []Frame) []time.Duration {
	var ts []time.Duration
	for _, f := range frames {
		ts = append(ts, f.At)
	}
	return ts
}

// TestVideoFramesTestsrc decodes the testsrc clip in each codec: the
// frames the reference samples, at its times, 97×61, and different from
// one another (testsrc's counter and sweep move every frame).
func TestVideoFramesTestsrc(t *testing.T) {
	ffmpeg := needVideoFFmpeg(t)
	for _, c := range clipCodecs(t, ffmpeg) {
		t.Run(c.name, func(t *testing.T) {
			data := testsrcClip(t, ffmpeg, c)
			frames, err := VideoFrames(context.Background(), data, VideoOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := wantTimes([]int{0, 6, 12, 19, 25, 31}, 10)
			if got := frameTimes(frames); !slices.Equal(got, want) {
				t.Fatalf("times %v, want %v", got, want)
			}
			for k, f := range frames {
				if f.Width != 97 || f.Height != 61 || len(f.Pix) != 97*61*3 {
					t.Fatalf("frame %d: %d×%d with %d bytes", k, f.Width, f.Height, len(f.Pix))
				}
				if k > 0 && bytes.Equal(f.Pix, frames[k-1].Pix) {
					t.Errorf("frames %d and %d are the same picture", k-1, k)
				}
			}
		})
	}
}

// TestVideoFramesColours decodes clips whose every frame is its own
// solid colour, so each decoded frame says which one it is: the indices
// the sampling rules pick, under each rule and a frame cap.
func TestVideoFramesColours(t *testing.T) {
	ffmpeg := needVideoFFmpeg(t)
	for _, c := range clipCodecs(t, ffmpeg) {
		t.Run(c.name, func(t *testing.T) {
			data := colourClip(t, ffmpeg, c, 32)
			for _, tc := range []struct {
				opt  VideoOptions
				want []int
			}{
				{VideoOptions{}, []int{0, 6, 12, 19, 25, 31}},
				{VideoOptions{MaxFrames: 3}, []int{0, 16, 31}},
				{VideoOptions{Sampling: SampleQwen2VL}, []int{0, 5, 10, 16, 21, 26}},
				{VideoOptions{FPS: 5}, sampleIndices(SampleQwen3VL, 32, 10, 5, DefaultMaxFrames)},
				{VideoOptions{FPS: 10}, sampleIndices(SampleQwen3VL, 32, 10, 10, DefaultMaxFrames)}, // every frame
			} {
				frames, err := VideoFrames(context.Background(), data, tc.opt)
				if err != nil {
					t.Fatalf("%+v: %v", tc.opt, err)
				}
				var got []int
				for _, f := range frames {
					got = append(got, frameIndex(f))
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("%+v: frames %v, want %v", tc.opt, got, tc.want)
				}
				if ts := frameTimes(frames); !slices.Equal(ts, wantTimes(tc.want, 10)) {
					t.Errorf("%+v: times %v, want %v", tc.opt, ts, wantTimes(tc.want, 10))
				}
			}
		})
	}
}

// TestVideoFramesRotated: a phone clip's rotation is applied, as an
// image's EXIF orientation is.
func TestVideoFramesRotated(t *testing.T) {
	ffmpeg := needVideoFFmpeg(t)
	c := clipCodecs(t, ffmpeg)[0]
	src := filepath.Join(t.TempDir(), "upright"+c.ext)
	if err := os.WriteFile(src, testsrcClip(t, ffmpeg, c), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "rotated.mp4")
	// -display_rotation (ffmpeg 6 on) or the rotate tag (before 6).
	cmd := exec.Command(ffmpeg, "-nostdin", "-v", "error", "-y", "-display_rotation", "90", "-i", src, "-c", "copy", out)
	if err := cmd.Run(); err != nil {
		makeClip(t, ffmpeg, nil, "-i", src, "-c", "copy", "-metadata:s:v:0", "rotate=90", out)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	frames, err := VideoFrames(context.Background(), data, VideoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(frames) != 6 || frames[0].Width != 61 || frames[0].Height != 97 {
		t.Fatalf("%d frames of %d×%d, want 6 of 61×97 (rotated)", len(frames), frames[0].Width, frames[0].Height)
	}
}

// TestVideoFramesRefused: what is not a readable clip is the input's
// fault (ErrMedia), with the reason.
func TestVideoFramesRefused(t *testing.T) {
	ffmpeg := needVideoFFmpeg(t)
	dir := t.TempDir()
	c := clipCodecs(t, ffmpeg)[0]
	clip := testsrcClip(t, ffmpeg, c)
	faststart := testsrcClip(t, ffmpeg, c, "-movflags", "+faststart")

	random := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var pngData bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 9, 7))
	img.Set(1, 1, color.RGBA{200, 10, 10, 255})
	if err := png.Encode(&pngData, img); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		data []byte
		opt  VideoOptions
		want string
	}{
		{"audio only (AAC)", makeClip(t, ffmpeg, nil, "-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac", filepath.Join(dir, "sine.m4a")), VideoOptions{}, "no video stream in the file"},
		{"audio only (WAV)", makeClip(t, ffmpeg, nil, "-f", "lavfi", "-i", "sine=d=1", filepath.Join(dir, "sine.wav")), VideoOptions{}, "no video stream in the file"},
		{"random bytes", random, VideoOptions{}, "video"},
		{"text", []byte("this is not a video, it is a sentence.\n"), VideoOptions{}, "video"},
		{"a still image", pngData.Bytes(), VideoOptions{}, "still image"},
		{"truncated mp4, index at the end", clip[:len(clip)/2], VideoOptions{}, "video"},
		{"truncated mp4, index first", faststart[:len(faststart)*2/3], VideoOptions{}, "video"},
		{"frames over the pixel limit", clip, VideoOptions{MaxPixels: 97*61 - 1}, "pixel limit"},
		{"file over the byte limit", clip, VideoOptions{MaxBytes: int64(len(clip) - 1)}, "byte limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames, err := VideoFrames(context.Background(), tc.data, tc.opt)
			if !errors.Is(err, ErrMedia) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%d frames, error %v; want ErrMedia saying %q", len(frames), err, tc.want)
			}
			if strings.Contains(err.Error(), os.TempDir()) {
				t.Errorf("error %q names the temporary file", err)
			}
			t.Logf("%v", err)
		})
	}
}

// TestVideoFramesBudget: a decode over its time budget is the input's
// fault, and says so.
func TestVideoFramesBudget(t *testing.T) {
	ffmpeg := needVideoFFmpeg(t)
	clip := testsrcClip(t, ffmpeg, clipCodecs(t, ffmpeg)[0])
	_, err := VideoFrames(context.Background(), clip, VideoOptions{Timeout: time.Nanosecond})
	if !errors.Is(err, ErrMedia) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("1 ns budget: %v, want ErrMedia and DeadlineExceeded", err)
	}
}

// TestVideoFramesTempFile: the temporary copy is gone afterwards, on
// success and on failure.
func TestVideoFramesTempFile(t *testing.T) {
	ffmpeg := needVideoFFmpeg(t)
	clip := testsrcClip(t, ffmpeg, clipCodecs(t, ffmpeg)[0])
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if _, err := VideoFrames(context.Background(), clip, VideoOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := VideoFrames(context.Background(), []byte("not a video"), VideoOptions{}); err == nil {
		t.Fatal("text decoded as a video")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left in the temporary folder: %v", left)
	}
}

// TestVideoTimestamps: Qwen3VLProcessor._calculate_timestamps, the times
// its prompt writes per temporal patch.
func TestVideoTimestamps(t *testing.T) {
	ntsc := 30000.0 / 1001
	frames := func(fps float64, idx ...int) []Frame {
		var out []Frame
		for _, i := range idx {
			out = append(out, Frame{Index: i, FPS: fps})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		frames   []Frame
		temporal int
		want     []float64
	}{
		{"golden clip", frames(4, 0, 2, 5, 7), 2, []float64{0.25, 1.5}},
		{"odd count: the last frame repeated", frames(2, 0, 1, 2), 2, []float64{0.25, 1}},
		{"one frame a patch", frames(10, 3, 9), 1, []float64{0.3, 0.9}},
		{"NTSC rate", frames(ntsc, 0, 15), 2, []float64{(0 + 15/ntsc) / 2}}, // in float64, not Go's exact constants
		{"no frames", nil, 2, nil},
	} {
		if got := VideoTimestamps(tc.frames, tc.temporal); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
