//go:build !(darwin && cgo)

package media

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVideoFramesCancel: cancelling the context stops ffmpeg mid-decode
// and returns the cancellation, not an input error.
func TestVideoFramesCancel(t *testing.T) {
	ffmpeg := needVideoFFmpeg(t)
	clip := testsrcClip(t, ffmpeg, clipCodecs(t, ffmpeg)[0])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testHookStarted = cancel
	defer func() { testHookStarted = nil }()
	start := time.Now()
	frames, err := VideoFrames(ctx, clip, VideoOptions{})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrMedia) {
		t.Fatalf("%d frames, error %v; want context.Canceled", len(frames), err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancelled decode took %v", d)
	}
}

// TestVideoFramesNoFFmpeg: a server without ffmpeg says to install it,
// and it is not the input's fault.
func TestVideoFramesNoFFmpeg(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := VideoFrames(context.Background(), []byte("\x00\x00\x00\x20ftypisom"), VideoOptions{})
	if !errors.Is(err, ErrNoVideoDecoder) || errors.Is(err, ErrMedia) || !strings.Contains(err.Error(), "install ffmpeg") {
		t.Fatalf("no ffmpeg on the PATH: %v; want ErrNoVideoDecoder saying to install ffmpeg", err)
	}
}

// probeSamples are ffprobe outputs (ffmpeg 5.1, with probeArgs) and
// hand-made variants; they seed FuzzVideoProbe too.
var probeSamples = []struct {
	name, json string
	want       videoInfo
	err        string // "" for success; else a part of the message
}{
	{"mp4", `{"programs":[],"streams":[{"codec_type":"video","width":97,"height":61,"r_frame_rate":"10/1","avg_frame_rate":"10/1","duration":"3.200000","nb_frames":"32","nb_read_packets":"32","disposition":{"attached_pic":0},"tags":{}}],"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2"}}`,
		videoInfo{97, 61, 32, 10}, ""},
	{"rotated", `{"streams":[{"codec_type":"video","width":97,"height":61,"r_frame_rate":"10/1","avg_frame_rate":"10/1","nb_frames":"32","nb_read_packets":"32","disposition":{"attached_pic":0},"tags":{},"side_data_list":[{"rotation":-90}]}],"format":{"format_name":"mov,mp4,m4a,3gp,3g2,mj2"}}`,
		videoInfo{61, 97, 32, 10}, ""},
	{"upside down", `{"streams":[{"codec_type":"video","width":97,"height":61,"avg_frame_rate":"10/1","nb_read_packets":"32","side_data_list":[{"rotation":180}]}]}`,
		videoInfo{97, 61, 32, 10}, ""},
	{"old rotate tag", `{"streams":[{"codec_type":"video","width":640,"height":480,"avg_frame_rate":"30000/1001","nb_frames":"300","tags":{"rotate":"270"}}]}`,
		videoInfo{480, 640, 300, 30000.0 / 1001}, ""},
	{"webm: no nb_frames", `{"streams":[{"codec_type":"video","width":97,"height":61,"r_frame_rate":"10/1","avg_frame_rate":"10/1","nb_read_packets":"32","disposition":{"attached_pic":0},"tags":{}}],"format":{"format_name":"matroska,webm"}}`,
		videoInfo{97, 61, 32, 10}, ""},
	{"scanned count preferred", `{"streams":[{"codec_type":"video","width":8,"height":8,"avg_frame_rate":"25/1","nb_frames":"100","nb_read_packets":"98"}]}`,
		videoInfo{8, 8, 98, 25}, ""},
	{"no average rate", `{"streams":[{"codec_type":"video","width":8,"height":8,"avg_frame_rate":"0/0","r_frame_rate":"24/1","nb_read_packets":"48"}]}`,
		videoInfo{8, 8, 48, 24}, ""},
	{"rate from duration", `{"streams":[{"codec_type":"video","width":8,"height":8,"avg_frame_rate":"0/0","r_frame_rate":"0/0","nb_read_packets":"48","duration":"4.0"}]}`,
		videoInfo{8, 8, 48, 12}, ""},
	{"audio only", `{"programs":[],"streams":[]}`, videoInfo{}, "no video stream in the file"},
	{"no streams key", `{}`, videoInfo{}, "no video stream in the file"},
	{"cover art", `{"streams":[{"codec_type":"video","width":500,"height":500,"avg_frame_rate":"0/0","r_frame_rate":"90000/1","nb_read_packets":"1","disposition":{"attached_pic":1}}],"format":{"format_name":"mp3"}}`,
		videoInfo{}, "no video stream in the file"},
	{"still image", `{"streams":[{"codec_type":"video","width":9,"height":7,"avg_frame_rate":"0/0","r_frame_rate":"25/1","nb_read_packets":"1"}],"format":{"format_name":"png_pipe"}}`,
		videoInfo{}, "still image"},
	{"no frames", `{"streams":[{"codec_type":"video","width":8,"height":8,"avg_frame_rate":"25/1","nb_read_packets":"0"}]}`, videoInfo{}, "no frames"},
	{"no rate", `{"streams":[{"codec_type":"video","width":8,"height":8,"avg_frame_rate":"0/0","r_frame_rate":"1/0","nb_read_packets":"3"}]}`, videoInfo{}, "no frame rate"},
	{"huge size", `{"streams":[{"codec_type":"video","width":100000,"height":8,"avg_frame_rate":"25/1","nb_read_packets":"3"}]}`, videoInfo{}, "not valid"},
	{"negative size", `{"streams":[{"codec_type":"video","width":-8,"height":8,"avg_frame_rate":"25/1","nb_read_packets":"3"}]}`, videoInfo{}, "not valid"},
	{"absurd count", `{"streams":[{"codec_type":"video","width":8,"height":8,"avg_frame_rate":"25/1","nb_read_packets":"99999999999999999999"}]}`, videoInfo{}, "no frames"},
	{"not JSON", `Invalid data found`, videoInfo{}, "ffprobe's output"},
}

func TestParseProbe(t *testing.T) {
	for _, s := range probeSamples {
		got, err := parseProbe([]byte(s.json))
		switch {
		case s.err == "" && err != nil:
			t.Errorf("%s: %v", s.name, err)
		case s.err == "" && got != s.want:
			t.Errorf("%s: %+v, want %+v", s.name, got, s.want)
		case s.err != "" && (err == nil || !strings.Contains(err.Error(), s.err)):
			t.Errorf("%s: %+v, %v; want an error saying %q", s.name, got, err, s.err)
		}
	}
}

func TestRational(t *testing.T) {
	for s, want := range map[string]float64{
		"10/1": 10, "30000/1001": 30000.0 / 1001, "25": 25, "0/0": 0, "1/0": 0, "-5/1": 0,
		"": 0, "x/1": 0, "10000000/1": 0, "1/3": 1.0 / 3,
	} {
		if got := frameRate(s); got != want {
			t.Errorf("frameRate(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestSelectExpr(t *testing.T) {
	if got, want := selectExpr([]int{0, 6, 6, 31}), "select='eq(n,0)+eq(n,6)+eq(n,31)'"; got != want {
		t.Errorf("selectExpr = %s, want %s", got, want)
	}
}

// FuzzVideoProbe: whatever ffprobe prints, parseProbe neither panics nor
// returns a header that planVideo would trust wrongly; every refusal but
// unreadable JSON (ffprobe's own failure) is the input's fault.
func FuzzVideoProbe(f *testing.F) {
	for _, s := range probeSamples {
		f.Add([]byte(s.json))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := parseProbe(data)
		if err != nil {
			if !errors.Is(err, ErrMedia) && !strings.Contains(err.Error(), "ffprobe's output") {
				t.Fatalf("error %v is neither ErrMedia nor a JSON error", err)
			}
			return
		}
		if info.Width <= 0 || info.Height <= 0 || info.Width > 1<<16 || info.Height > 1<<16 {
			t.Fatalf("size %d×%d", info.Width, info.Height)
		}
		if info.Frames <= 0 || info.Frames > maxStreamFrames {
			t.Fatalf("%d frames", info.Frames)
		}
		if !(info.FPS > 0) || info.FPS > maxFPS {
			t.Fatalf("frame rate %v", info.FPS)
		}
		idx, err := planVideo(info, VideoOptions{}.withDefaults())
		if err == nil {
			checkSampling(t, SampleQwen3VL, info.Frames, info.FPS, DefaultVideoFPS, DefaultMaxFrames, idx)
		}
	})
}

// TestDecodeFFWrongSize: frames of another size than the header gave
// are refused, whether they are larger (bytes left over: ffmpeg is
// stopped) or smaller (the output ends early).
func TestDecodeFFWrongSize(t *testing.T) {
	ffmpeg := needVideoFFmpeg(t)
	clip := testsrcClip(t, ffmpeg, clipCodecs(t, ffmpeg)[0])
	path := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(path, clip, 0o644); err != nil {
		t.Fatal(err)
	}
	idx := []int{0, 6, 12, 19, 25, 31}
	for _, tc := range []struct {
		info videoInfo
		want string
	}{
		{videoInfo{Width: 50, Height: 61, Frames: 32, FPS: 10}, "not the 50×61"},
		{videoInfo{Width: 200, Height: 61, Frames: 32, FPS: 10}, "ends early"},
	} {
		frames, err := decodeFF(context.Background(), ffmpeg, path, tc.info, idx)
		if !errors.Is(err, ErrMedia) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("header %d×%d: %d frames, %v; want ErrMedia saying %q", tc.info.Width, tc.info.Height, len(frames), err, tc.want)
		}
	}
}
