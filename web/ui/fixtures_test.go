package ui

import (
	"encoding/binary"
	"flag"
	"image"
	"image/color"
	"image/png"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var chatPNG = flag.String("chatpng", "", "write the documentation screenshot (a conversation with a dropped image) to this path, e.g. ../../docs/chat.png")

// writeFixtures writes the files the browser tests drop on the page: a
// picture (a sunset over hills) and half a second of a 440 Hz tone.
func writeFixtures(t *testing.T, dir string) (imagePath, audioPath string) {
	t.Helper()
	imagePath = filepath.Join(dir, "sunset.png")
	audioPath = filepath.Join(dir, "tone.wav")
	f, err := os.Create(imagePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, sunset(320, 200)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(audioPath, tone(16000, 440, 0.5), 0o644); err != nil {
		t.Fatal(err)
	}
	return imagePath, audioPath
}

// sunset draws a sky fading from blue to orange, a sun, and two hills.
func sunset(w, h int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	lerp := func(a, b uint8, f float64) uint8 { return uint8(float64(a) + (float64(b)-float64(a))*f) }
	sunX, sunY, sunR := float64(w)*0.68, float64(h)*0.58, float64(h)*0.16
	for y := 0; y < h; y++ {
		f := float64(y) / float64(h)
		sky := color.RGBA{lerp(70, 250, f), lerp(110, 160, f), lerp(190, 90, f), 255}
		for x := 0; x < w; x++ {
			c := sky
			if math.Hypot(float64(x)-sunX, float64(y)-sunY) < sunR {
				c = color.RGBA{255, 214, 120, 255}
			}
			far := float64(h)*0.62 + 14*math.Sin(float64(x)/37)
			near := float64(h)*0.75 + 18*math.Sin(float64(x)/53+1.5)
			switch {
			case float64(y) > near:
				c = color.RGBA{46, 110, 52, 255}
			case float64(y) > far:
				c = color.RGBA{88, 150, 80, 255}
			}
			img.Set(x, y, c)
		}
	}
	return img
}

// tone returns a mono 16-bit PCM WAV file of a sine wave.
func tone(rate, hz int, seconds float64) []byte {
	n := int(float64(rate) * seconds)
	b := make([]byte, 44+2*n)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], uint32(rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(2*rate))
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(2*n))
	for i := 0; i < n; i++ {
		v := int16(12000 * math.Sin(2*math.Pi*float64(hz)*float64(i)/float64(rate)))
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(v))
	}
	return b
}

// screenshotReply is the scripted answer of the screenshot's stand-in
// model: it describes the picture writeFixtures draws.
const screenshotReply = "It's a **sunset over rolling hills**, drawn in flat colours:\n\n" +
	"- The sky fades from deep blue at the top to warm orange near the horizon.\n" +
	"- A pale yellow sun sits low on the right, half behind the hills.\n" +
	"- Two layers of green hills fill the bottom third.\n\n" +
	"| Element | Colour |\n|---|---|\n| Sky | blue → orange |\n| Sun | `#FFD678` |\n| Hills | two greens |\n\n" +
	"To make something similar in Python:\n\n```python\nfrom PIL import Image\n\nimg = Image.new(\"RGB\", (320, 200), \"#ffd678\")  # sun colour\nimg.save(\"sunset.png\")\n```"

// TestDocsScreenshot makes docs/chat.png: a conversation with a dropped
// image. The committed vision checkpoints are tiny and random, so their
// replies are noise: the page talks to fakeAPI, whose model is listed as
// Gemma 3 is (generic tier, vision, tools) and streams a scripted reply;
// run it on purpose with -chatpng.
func TestDocsScreenshot(t *testing.T) {
	if *chatPNG == "" {
		t.Skip("run with -chatpng=../../docs/chat.png to make the documentation screenshot")
	}
	browserNeeds(t)
	api := newFakeAPI(screenshotReply, 15*time.Millisecond,
		map[string]any{"id": "mlx-community/gemma-3-4b-it-4bit", "object": "model", "tier": "generic", "capabilities": []string{"vision", "tools"},
			"context_length": 8192, "fit": map[string]any{"status": "fits", "need_bytes": 3.4e9, "available_bytes": 11.8e9}},
		map[string]any{"id": "Qwen/Qwen3-0.6B", "object": "model", "tier": "generic", "capabilities": []string{"tools"},
			"context_length": 8192, "fit": map[string]any{"status": "fits", "need_bytes": 1.6e9, "available_bytes": 11.8e9}},
	)
	srv := httptest.NewServer(api)
	defer srv.Close()
	image, audio := writeFixtures(t, t.TempDir())
	shot, err := filepath.Abs(*chatPNG)
	if err != nil {
		t.Fatal(err)
	}
	runDriver(t, "screenshot", srv.URL+"/", driverEnv{out: t.ArtifactDir(), image: image, audio: audio, shot: shot,
		models: []string{"mlx-community/gemma-3-4b-it-4bit", "Qwen/Qwen3-0.6B"}})
	t.Logf("wrote %s", shot)
}
