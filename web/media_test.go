package web

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth/engine/pool"
	"hearth/internal/testmodels"
)

// Images over HTTP, end to end: a real server on a loopback port, real
// PNG and JPEG bytes (made here with image/png and image/jpeg), every API
// shape that carries pictures. The refusals are tested with chat-tiny,
// which has no vision: as it is (the model is refused, before anything is
// decoded) and with the server told to assume vision (the media checks,
// which a vision model reaches). The success path runs on
// testdata/models/gemma3_vision-f32.

// noise is a w×h picture of random colours (which compresses to nothing:
// its PNG is about 3·w·h bytes).
func noise(w, h int, seed uint64) image.Image {
	r := rand.New(rand.NewPCG(seed, 1))
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.Uint32())
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	return img
}

// gradient is a smooth w×h picture, as a photo's JPEG is.
func gradient(w, h int) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 128, 255})
		}
	}
	return img
}

func pngOf(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegOf(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bombPNG is a decompression bomb's header: a valid PNG that says it is
// w×h, with a few bytes of pixel data.
func bombPNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(make([]byte, 4096))
	zw.Close()
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return b.Bytes()
}

// bombJPEG is a small JPEG whose frame header says it is w×h.
func bombJPEG(t testing.TB, w, h uint16) []byte {
	t.Helper()
	b := jpegOf(t, gradient(16, 16))
	i := bytes.Index(b, []byte{0xFF, 0xC0})
	if i < 0 {
		t.Fatal("no SOF0 marker in the JPEG")
	}
	// marker, length (2), precision (1), height (2), width (2)
	binary.BigEndian.PutUint16(b[i+5:], h)
	binary.BigEndian.PutUint16(b[i+7:], w)
	return b
}

func dataURL(mime string, b []byte) string {
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(b)
}

// imagePart is one picture of a test request: its bytes, or a URL.
type imagePart struct {
	data []byte
	url  string
	raw  string // a source as is (a malformed data URL)
}

func (p imagePart) dataURL() string {
	switch {
	case p.url != "":
		return p.url
	case p.raw != "":
		return p.raw
	}
	return dataURL("image/png", p.data)
}

func (p imagePart) base64() string {
	if p.raw != "" {
		return p.raw
	}
	return base64.StdEncoding.EncodeToString(p.data)
}

// mediaShape is one API's way of sending pictures.
type mediaShape struct {
	name, path string
	urls       bool // the API can name an image by URL
	// body is a request asking text about imgs, streamed or not.
	body func(text string, imgs []imagePart, stream bool) string
	// param is where the API names picture i.
	param func(i int) string
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var mediaShapes = []mediaShape{
	{"chat", "/v1/chat/completions", true,
		func(text string, imgs []imagePart, stream bool) string {
			parts := []any{map[string]any{"type": "text", "text": text}}
			for _, p := range imgs {
				parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": p.dataURL(), "detail": "auto"}})
			}
			return js(map[string]any{"model": "", "max_tokens": 8, "stream": stream, "messages": []any{map[string]any{"role": "user", "content": parts}}})
		},
		func(i int) string { return fmt.Sprintf("messages[0].content[%d]", i+1) }},
	{"responses", "/v1/responses", true,
		func(text string, imgs []imagePart, stream bool) string {
			parts := []any{map[string]any{"type": "input_text", "text": text}}
			for _, p := range imgs {
				parts = append(parts, map[string]any{"type": "input_image", "image_url": p.dataURL()})
			}
			return js(map[string]any{"max_output_tokens": 8, "stream": stream, "input": []any{map[string]any{"role": "user", "content": parts}}})
		},
		func(i int) string { return fmt.Sprintf("input[0].content[%d]", i+1) }},
	{"messages", "/v1/messages", true,
		func(text string, imgs []imagePart, stream bool) string {
			var blocks []any
			for _, p := range imgs {
				src := map[string]any{"type": "base64", "media_type": "image/png", "data": p.base64()}
				if p.url != "" {
					src = map[string]any{"type": "url", "url": p.url}
				}
				blocks = append(blocks, map[string]any{"type": "image", "source": src})
			}
			blocks = append(blocks, map[string]any{"type": "text", "text": text})
			return js(map[string]any{"max_tokens": 8, "stream": stream, "messages": []any{map[string]any{"role": "user", "content": blocks}}})
		},
		func(i int) string { return fmt.Sprintf("messages[0].content[%d]", i) }},
	{"ollama chat", "/api/chat", false,
		func(text string, imgs []imagePart, stream bool) string {
			b64 := []string{}
			for _, p := range imgs {
				b64 = append(b64, p.base64())
			}
			return js(map[string]any{"stream": stream, "options": map[string]any{"num_predict": 8}, "messages": []any{map[string]any{"role": "user", "content": text, "images": b64}}})
		},
		func(i int) string { return fmt.Sprintf("messages[0].images[%d]", i) }},
	{"ollama generate", "/api/generate", false,
		func(text string, imgs []imagePart, stream bool) string {
			b64 := []string{}
			for _, p := range imgs {
				b64 = append(b64, p.base64())
			}
			return js(map[string]any{"stream": stream, "options": map[string]any{"num_predict": 8}, "prompt": text, "images": b64})
		},
		func(i int) string { return fmt.Sprintf("images[%d]", i) }},
}

// errorOf reads an error body in any of the three dialects: its message,
// and the param when the dialect has one.
func errorOf(t *testing.T, r response) (msg, param string) {
	t.Helper()
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || body.Error == nil {
		t.Fatalf("not an error body: %s", r.Body)
	}
	if json.Unmarshal(body.Error, &msg) == nil {
		return msg, ""
	}
	var d struct {
		Message string  `json:"message"`
		Param   *string `json:"param"`
	}
	if err := json.Unmarshal(body.Error, &d); err != nil {
		t.Fatalf("not an error body: %s", r.Body)
	}
	if d.Param != nil {
		param = *d.Param
	}
	return d.Message, param
}

// refused posts body and checks the 400: its message starts with at (the
// part it names) and contains want; in the OpenAI dialect its param is at
// or a field of it. Then the server must still answer a text request.
func (ts *testServer) refused(t *testing.T, path, body, at, want string) string {
	t.Helper()
	r := ts.post(t, path, body)
	if r.Status != http.StatusBadRequest {
		t.Fatalf("POST %s = %d %s, want 400", path, r.Status, r.Body)
	}
	msg, param := errorOf(t, r)
	t.Logf("%s: %s", path, msg)
	if !strings.HasPrefix(msg, at) || !strings.Contains(msg, want) {
		t.Errorf("POST %s: message %q, want one starting with %q and saying %q", path, msg, at, want)
	}
	if dialectOf(path) == dialectOpenAI && !strings.HasPrefix(param, at) {
		t.Errorf("POST %s: param %q, want %q (or a field of it)", path, param, at)
	}
	ts.stillServes(t)
	return msg
}

// stillServes checks the server answers a text chat.
func (ts *testServer) stillServes(t *testing.T) {
	t.Helper()
	if r := ts.post(t, "/v1/chat/completions", chatBody("still there?", 4, "")); r.Status != http.StatusOK {
		t.Fatalf("a text chat after the refusal: %d %s", r.Status, r.Body)
	}
}

// TestImagesTextOnlyModel: every API refuses pictures for a model without
// vision, naming the model and the first picture, before decoding them
// (a corrupt one gets the same answer).
func TestImagesTextOnlyModel(t *testing.T) {
	ts := startServer(t)
	good := imagePart{data: pngOf(t, gradient(32, 24))}
	corrupt := imagePart{data: []byte("\x89PNG\r\n\x1a\nnot a picture at all")}
	for _, sh := range mediaShapes {
		t.Run(sh.name, func(t *testing.T) {
			for _, imgs := range [][]imagePart{{good}, {corrupt, good}} {
				ts.refused(t, sh.path, sh.body("What is in this picture?", imgs, false), sh.param(0), `model "chat-tiny" takes no images`)
			}
		})
	}
	t.Run("count_tokens", func(t *testing.T) {
		ts.refused(t, "/v1/messages/count_tokens", mediaShapes[2].body("What is this?", []imagePart{good}, false), "messages[0].content[0]", `model "chat-tiny" takes no images`)
	})
	t.Run("video", func(t *testing.T) {
		body := js(map[string]any{"max_tokens": 4, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "video_url", "video_url": map[string]any{"url": "data:video/mp4;base64,AAAAIGZ0eXBpc29t"}}}}}})
		ts.refused(t, "/v1/chat/completions", body, "messages[0].content[0]", `model "chat-tiny" takes no video`)
	})
	// The body limit admits a 20 MiB picture as base64 (27 MiB): the
	// answer is the model's refusal, not 413.
	t.Run("20 MiB admitted", func(t *testing.T) {
		big := make([]byte, 20<<20)
		copy(big, pngOf(t, gradient(8, 8)))
		ts.refused(t, "/v1/chat/completions", mediaShapes[0].body("big", []imagePart{{data: big}}, false), "messages[0].content[1]", "takes no images")
	})
}

// visionServer is chat-tiny served as if it took pictures, so that
// requests reach the media checks, under the limits lim (zero: the
// defaults).
func visionServer(t *testing.T, lim MediaOptions) *testServer {
	lim.assumeVision = true
	return startServer(t, func(c *serverConfig) { c.opt.Media = lim })
}

// TestImageChecks: each media check, on each API, is a 400 that names
// the part, and the server goes on serving.
func TestImageChecks(t *testing.T) {
	ts := visionServer(t, MediaOptions{PartBytes: 256 << 10, RequestBytes: 400 << 10, Images: 4})
	photo := jpegOf(t, noise(64, 64, 1))
	picture := pngOf(t, noise(64, 64, 2))
	big := pngOf(t, noise(200, 200, 3)) // about 120 KiB, under the part limit
	tests := []struct {
		name string
		imgs []imagePart
		bad  int // the picture refused
		want string
	}{
		{"corrupt PNG", []imagePart{{data: picture}, {data: append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0xAB}, 64)...)}}, 1, "corrupt PNG"},
		{"truncated PNG", []imagePart{{data: picture[:len(picture)/2]}}, 0, "truncated"},
		{"truncated JPEG", []imagePart{{data: photo[:len(photo)/2]}}, 0, "truncated"},
		{"zero-size", []imagePart{{data: picture}, {data: []byte{}}}, 1, "empty"},
		{"PNG bomb header", []imagePart{{data: bombPNG(100_000, 100_000)}}, 0, "megapixel"},
		{"JPEG bomb header", []imagePart{{data: bombJPEG(t, 65_000, 65_000)}}, 0, "megapixel"},
		{"not an image", []imagePart{{data: []byte("plain text, surely not a picture")}}, 0, "unrecognised file format"},
		{"too many images", []imagePart{{data: picture}, {data: picture}, {data: picture}, {data: picture}, {data: picture}}, 4, "too many images: at most 4 media parts per request"},
		{"part over its limit", []imagePart{{data: append(bytes.Clone(picture), make([]byte, 300<<10)...)}}, 0, "at most 256 KiB per image"},
		{"request over its limit", []imagePart{{data: big}, {data: big}, {data: big}, {data: big}}, 3, "at most 400 KiB per request"},
		{"not base64", []imagePart{{raw: "iVBOR@@@@"}}, 0, "not valid base64"},
	}
	for _, sh := range mediaShapes {
		for _, tt := range tests {
			t.Run(sh.name+"/"+tt.name, func(t *testing.T) {
				imgs := tt.imgs
				if tt.name == "not base64" && !strings.HasPrefix(sh.path, "/api/") && sh.name != "messages" {
					imgs = []imagePart{{raw: "data:image/png;base64,iVBOR@@@@"}}
				}
				ts.refused(t, sh.path, sh.body("What is this?", imgs, false), sh.param(tt.bad), tt.want)
			})
		}
	}
	// Data URLs as OpenAI's APIs send them, and not.
	for _, tt := range []struct{ name, url, want string }{
		{"not a data URL", "iVBORw0KGgo=", "expected a base64 data URL"},
		{"no comma", "data:image/png;base64", "no comma"},
		{"not base64 encoded", "data:image/png,%89PNG", "not base64"},
	} {
		t.Run("chat/"+tt.name, func(t *testing.T) {
			ts.refused(t, "/v1/chat/completions", mediaShapes[0].body("?", []imagePart{{raw: tt.url}}, false), "messages[0].content[1]", tt.want)
		})
	}
	t.Run("URL fetching off", func(t *testing.T) {
		for _, sh := range mediaShapes {
			if sh.urls {
				ts.refused(t, sh.path, sh.body("?", []imagePart{{url: "https://example.com/cat.png"}}, false), sh.param(0), "URL fetching is off")
			}
		}
	})
	t.Run("image outside a user message", func(t *testing.T) {
		body := js(map[string]any{"messages": []any{map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": dataURL("image/png", picture)}}}}}})
		ts.refused(t, "/v1/chat/completions", body, "messages[0].content[0]", "user messages only")
	})
	t.Run("video", func(t *testing.T) {
		// Not a video: a decoder (ffmpeg) refuses it; without one the
		// part is refused all the same, no model here taking video.
		body := js(map[string]any{"max_tokens": 4, "messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "video_url", "video_url": map[string]any{"url": dataURL("video/mp4", []byte("not a video, just bytes"))}}}}}})
		ts.refused(t, "/v1/chat/completions", body, "messages[0].content[0]", "video")
	})
}

// TestImageDefaultLimits: at the defaults a picture is at most 20 MiB and
// a request's at most 40 MiB, both admitted by the body limit.
func TestImageDefaultLimits(t *testing.T) {
	ts := visionServer(t, MediaOptions{})
	over := make([]byte, 20<<20+1)
	copy(over, pngOf(t, gradient(8, 8)))
	ts.refused(t, "/v1/chat/completions", mediaShapes[0].body("?", []imagePart{{data: over}}, false), "messages[0].content[1]", "at most 20 MiB per image")
	ts.refused(t, "/api/chat", mediaShapes[3].body("?", []imagePart{{data: over}}, false), "messages[0].images[0]", "at most 20 MiB per image")
}

// TestImageURLs: with URL fetching on, an http(s) URL is downloaded,
// bounded in size and time; a fetch that fails is a 400 naming the part;
// loopback and private addresses are never fetched from.
func TestImageURLs(t *testing.T) {
	picture := pngOf(t, gradient(32, 32))
	mux := http.NewServeMux()
	mux.HandleFunc("/ok.png", func(w http.ResponseWriter, r *http.Request) { w.Write(picture) })
	mux.HandleFunc("/big.png", func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 300<<10)) })
	mux.HandleFunc("/slow.png", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/corrupt.png", func(w http.ResponseWriter, r *http.Request) { w.Write(picture[:40]) })
	mux.Handle("/moved.png", http.RedirectHandler("/ok.png", http.StatusFound))
	images := httptest.NewServer(mux)
	defer images.Close()

	ts := visionServer(t, MediaOptions{FetchURLs: true, allowPrivate: true, PartBytes: 256 << 10, FetchTimeout: 500 * time.Millisecond})
	for _, sh := range mediaShapes {
		if !sh.urls {
			continue
		}
		t.Run(sh.name, func(t *testing.T) {
			for _, tt := range []struct{ path, want string }{
				{"/missing.png", "answered 404"},
				{"/big.png", "at most 256 KiB per image"},
				{"/slow.png", "took longer than 500ms"},
				{"/corrupt.png", "PNG"},
			} {
				ts.refused(t, sh.path, sh.body("?", []imagePart{{url: images.URL + tt.path}}, false), sh.param(0), tt.want)
			}
			// A good picture, directly or through a redirect, passes the
			// server's checks (chat-tiny has no tower: the engine may
			// still refuse it, but not for its URL).
			for _, p := range []string{"/ok.png", "/moved.png"} {
				r := ts.post(t, sh.path, sh.body("?", []imagePart{{url: images.URL + p}}, false))
				if r.Status >= 500 || bytes.Contains(r.Body, []byte("fetch")) || bytes.Contains(r.Body, []byte("invalid_media")) {
					t.Errorf("%s: %d %s", p, r.Status, r.Body)
				}
			}
			ts.refused(t, sh.path, sh.body("?", []imagePart{{url: "ftp://example.com/a.png"}}, false), sh.param(0), "")
		})
	}

	// The default: no loopback (nor private) address, however named.
	guarded := visionServer(t, MediaOptions{FetchURLs: true})
	for _, u := range []string{images.URL + "/ok.png", strings.Replace(images.URL, "127.0.0.1", "localhost", 1) + "/ok.png"} {
		guarded.refused(t, "/v1/chat/completions", mediaShapes[0].body("?", []imagePart{{url: u}}, false), "messages[0].content[1]", "loopback, private or link-local")
	}
	// Nor through a redirect from a public one: the check is on every
	// connection (here the first one is refused already, as the test's
	// server is on loopback; TestPublicAddress covers the rule).
}

func TestPublicAddress(t *testing.T) {
	for addr, ok := range map[string]bool{
		"93.184.216.34:443": true, "[2606:2800:220:1::1]:80": true,
		"127.0.0.1:80": false, "[::1]:80": false, "10.1.2.3:80": false, "172.16.0.1:80": false, "192.168.1.1:80": false,
		"169.254.169.254:80": false, "[fe80::1]:80": false, "[fc00::1]:80": false, "0.0.0.0:80": false, "[::]:80": false,
		"100.64.0.1:80": false, "224.0.0.1:80": false, "[::ffff:127.0.0.1]:80": false, "[::ffff:10.0.0.1]:80": false, "junk": false,
	} {
		if err := publicAddress(addr); (err == nil) != ok {
			t.Errorf("publicAddress(%s) = %v, want ok %v", addr, err, ok)
		}
	}
}

// canonical is JSON with its object keys sorted.
func canonical(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "invalid: " + string(b)
	}
	return js(v)
}

// TestMediaPlaceholders: each API's pictures become {"type": "image"}
// parts where they were, with the text, and their sources in order.
func TestMediaPlaceholders(t *testing.T) {
	a, b := imagePart{raw: "QUFB"}, imagePart{raw: "QkJC"}
	for _, sh := range mediaShapes {
		t.Run(sh.name, func(t *testing.T) {
			body := sh.body("Compare them.", []imagePart{a, b}, false)
			if !strings.HasPrefix(sh.path, "/api/") && sh.name != "messages" {
				body = strings.NewReplacer(`"QUFB"`, `"data:image/png;base64,QUFB"`, `"QkJC"`, `"data:image/png;base64,QkJC"`).Replace(body)
			}
			var msgs []byte
			var refs []mediaRef
			switch sh.path {
			case "/v1/chat/completions":
				job, err := parseChat([]byte(body))
				if err != nil {
					t.Fatal(err)
				}
				msgs, refs = job.req.Messages, job.media
			case "/v1/responses":
				job, err := parseResponses([]byte(body))
				if err != nil {
					t.Fatal(err)
				}
				msgs, refs = job.req.Messages, job.media
			case "/v1/messages":
				job, err := parseMessages([]byte(body))
				if err != nil {
					t.Fatal(err)
				}
				msgs, refs = job.req.Messages, job.media
			case "/api/chat":
				job, err := parseOllamaChat([]byte(body))
				if err != nil {
					t.Fatal(err)
				}
				msgs, refs = job.req.Messages, job.media
			case "/api/generate":
				job, err := parseOllamaGenerate([]byte(body))
				if err != nil {
					t.Fatal(err)
				}
				msgs, refs = job.req.Messages, job.media
			}
			want := map[string]string{
				"chat":            `[{"role":"user","content":[{"type":"text","text":"Compare them."},{"type":"image"},{"type":"image"}]}]`,
				"responses":       `[{"role":"user","content":[{"type":"text","text":"Compare them."},{"type":"image"},{"type":"image"}]}]`,
				"messages":        `[{"role":"user","content":[{"type":"image"},{"type":"image"},{"type":"text","text":"Compare them."}]}]`,
				"ollama chat":     `[{"role":"user","content":[{"type":"image"},{"type":"image"},{"type":"text","text":"Compare them."}]}]`,
				"ollama generate": `[{"role":"user","content":[{"type":"image"},{"type":"image"},{"type":"text","text":"Compare them."}]}]`,
			}[sh.name]
			if canonical(msgs) != canonical([]byte(want)) {
				t.Errorf("messages\n = %s\nwant %s", msgs, want)
			}
			if len(refs) != 2 || !strings.HasSuffix(refs[0].data, "QUFB") || !strings.HasSuffix(refs[1].data, "QkJC") {
				t.Errorf("media %+v, want QUFB then QkJC", refs)
			}
			for i, r := range refs {
				if r.at != sh.param(i) {
					t.Errorf("media %d at %q, want %q", i, r.at, sh.param(i))
				}
			}
			checkConverted(t, msgs, refs)
		})
	}
}

// visionModel is the tiny Gemma 3 checkpoint with a vision tower
// (tools/oracle/make_vision_goldens.py).
func visionModel(t *testing.T) pool.Model {
	t.Helper()
	dir := filepath.Join(testmodels.Root(), "gemma3_vision-f32")
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		t.Fatalf("%s: %v (the tiny Gemma 3 vision checkpoint is committed)", dir, err)
	}
	return pool.Model{ID: "gemma3_vision", Dir: dir}
}

// TestImagesAnswered: a model with vision answers a real picture on every
// API, streamed; the picture's tokens are in its prompt.
func TestImagesAnswered(t *testing.T) {
	m := visionModel(t)
	ts := startServer(t, func(c *serverConfig) { c.model = m })
	photo := imagePart{data: jpegOf(t, gradient(96, 64))}
	picture := imagePart{data: pngOf(t, noise(40, 30, 4))}
	for _, sh := range mediaShapes {
		t.Run(sh.name, func(t *testing.T) {
			imgs := []imagePart{photo}
			if sh.name == "chat" || sh.name == "ollama chat" {
				imgs = append(imgs, picture) // two, in order
			}
			r := ts.post(t, sh.path, sh.body("Describe the pictures.", imgs, true))
			if r.Status != http.StatusOK {
				t.Fatalf("POST %s = %d %s", sh.path, r.Status, r.Body)
			}
			// (A Responses stream cut by its token budget ends incomplete.)
			end := map[string]string{"/v1/chat/completions": "data: [DONE]", "/v1/responses": "event: response.",
				"/v1/messages": "event: message_stop", "/api/chat": `"done":true`, "/api/generate": `"done":true`}[sh.path]
			if sh.path == "/v1/responses" && !bytes.Contains(r.Body, []byte("event: response.completed")) && !bytes.Contains(r.Body, []byte("event: response.incomplete")) {
				t.Errorf("the stream did not end: %s", r.Body)
			}
			if !bytes.Contains(r.Body, []byte(end)) {
				t.Errorf("the stream did not end (%s): %s", end, r.Body)
			}
		})
	}
	t.Run("prompt tokens", func(t *testing.T) {
		var with, without chatOut
		ts.postOK(t, "/v1/chat/completions", mediaShapes[0].body("Describe it.", []imagePart{photo}, false), &with)
		ts.postOK(t, "/v1/chat/completions", mediaShapes[0].body("Describe it.", nil, false), &without)
		if with.Usage.PromptTokens <= without.Usage.PromptTokens+1 {
			t.Errorf("prompt tokens with a picture %d, without %d: the picture's tokens are missing", with.Usage.PromptTokens, without.Usage.PromptTokens)
		}
	})
	t.Run("capabilities", func(t *testing.T) {
		r := ts.do(t, http.MethodGet, "/v1/models", "", nil)
		if !bytes.Contains(r.Body, []byte(`"vision"`)) {
			t.Errorf("/v1/models does not list vision: %s", r.Body)
		}
		var show showResponse
		ts.postOK(t, "/api/show", `{"model":"gemma3_vision"}`, &show)
		if len(show.Capabilities) < 2 || show.Capabilities[0] != "completion" || !strings.Contains(strings.Join(show.Capabilities, ","), "vision") {
			t.Errorf("/api/show capabilities %v, want completion and vision", show.Capabilities)
		}
	})
}
