package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"hearth/engine"
	"hearth/media"
)

// Images and video in requests. Each API's parser turns an image part
// (OpenAI image_url and input_image, Anthropic image blocks, Ollama
// images) into {"type": "image"} in the conversation, which is what
// Hugging Face chat templates test for, and notes where its bytes are in
// a mediaRef, in the order the parts appear. Once the model is known,
// Server.loadMedia refuses them for a model without vision (before
// decoding anything), then decodes each under the limits into
// engine.Request.Images (and Videos, Audio).

// MediaOptions bound the images and video a request may carry, and say
// whether their parts may name http(s) URLs for the server to fetch.
// Zero fields take the defaults.
type MediaOptions struct {
	// FetchURLs lets an image or video part name an http(s) URL, which
	// the server then downloads (size and time bounded, never from a
	// loopback, private or link-local address). Off, such a part gets a
	// 400 that says so: a client sends the bytes themselves, as a base64
	// data URL.
	FetchURLs bool
	// FetchTimeout bounds one URL's download (default 30s).
	FetchTimeout time.Duration
	// PartBytes bounds one image or video as encoded (default
	// media.DefaultMaxBytes, 20 MiB); RequestBytes all of a request's
	// (default DefaultMediaRequestBytes).
	PartBytes, RequestBytes int64
	// Pixels bounds one picture's width·height, read from its header
	// before any pixel is decoded (default media.DefaultMaxPixels).
	Pixels int
	// Frames bounds the frames kept of one video (default
	// media.DefaultMaxFrames).
	Frames int
	// Images bounds the pictures of one request (default
	// DefaultMaxImages); a video counts as one.
	Images int

	// allowPrivate lets URL fetches reach loopback and private addresses
	// (tests serve images from 127.0.0.1).
	allowPrivate bool
	// assumeVision treats every model as taking images, so that tests
	// reach the media checks with a text-only model.
	assumeVision bool
}

// Default media limits beside media's own (per part: bytes, pixels,
// frames).
const (
	// DefaultMediaRequestBytes bounds the encoded media of one request:
	// two large photos. As base64 it is 53 MiB, which the default body
	// limit admits.
	DefaultMediaRequestBytes = 40 << 20
	// DefaultMaxImages bounds the pictures of one request.
	DefaultMaxImages = 16
	// DefaultFetchTimeout bounds one media URL's download.
	DefaultFetchTimeout = 30 * time.Second
)

// withDefaults fills the zero fields.
func (o MediaOptions) withDefaults() MediaOptions {
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.PartBytes <= 0 {
		o.PartBytes = media.DefaultMaxBytes
	}
	if o.RequestBytes <= 0 {
		o.RequestBytes = DefaultMediaRequestBytes
	}
	if o.Pixels <= 0 {
		o.Pixels = media.DefaultMaxPixels
	}
	if o.Frames <= 0 {
		o.Frames = media.DefaultMaxFrames
	}
	if o.Images <= 0 {
		o.Images = DefaultMaxImages
	}
	return o
}

// mediaKind is what a part holds.
type mediaKind uint8

const (
	kindImage mediaKind = iota
	kindVideo
	kindAudio
)

func (k mediaKind) String() string {
	switch k {
	case kindVideo:
		return "video"
	case kindAudio:
		return "audio"
	}
	return "image"
}

// placeholder is the part a media part becomes in the conversation the
// chat template renders: {"type": "image"} or {"type": "video"}.
func (k mediaKind) placeholder() json.RawMessage {
	return mustJSON(object{{"type", mustJSON(k.String())}})
}

// withPlaceholder appends kind's placeholder to a message's content list,
// which the first media part starts from the text parts before it.
func withPlaceholder(list []json.RawMessage, texts []string, kind mediaKind) []json.RawMessage {
	if list == nil {
		list = make([]json.RawMessage, 0, len(texts)+1)
		for _, t := range texts {
			list = append(list, textPart(t))
		}
	}
	return append(list, kind.placeholder())
}

// mediaRef is one image or video of a request, not read yet.
type mediaRef struct {
	at   string // the part's place in the request ("messages[0].content[1]")
	src  string // the field holding its source ("messages[0].content[1].image_url.url")
	kind mediaKind
	// data is a data: URL, an http(s) URL, or with bare, base64 alone
	// (Ollama's images, Anthropic's base64 source).
	data string
	bare bool
}

// sourceRef checks a part's source string (a data: URL or an http(s)
// URL) and returns its ref.
func sourceRef(at, src string, kind mediaKind, s string) (mediaRef, error) {
	ref := mediaRef{at: at, src: src, kind: kind, data: s}
	switch scheme, _, _ := strings.Cut(s, ":"); strings.ToLower(scheme) {
	case "data", "http", "https":
		return ref, nil
	}
	if s == "" {
		return ref, badRequest(src, "%s: required (a base64 data URL such as data:image/png;base64,…)", src)
	}
	return ref, badRequest(src, "%s: expected a base64 data URL (data:%s/…;base64,…) or an http(s) URL", src, kind)
}

// mediaURL reads the URL of an image_url or video_url field: an object
// {"url": …, "detail": …} as OpenAI sends it, or the URL as a string.
func mediaURL(at string, raw json.RawMessage) (string, string, error) {
	if isNull(raw) {
		return "", at, badRequest(at, "%s: required ({\"url\": \"data:…;base64,…\"})", at)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, at, nil
	}
	var o struct {
		URL *string `json:"url"`
	}
	if err := json.Unmarshal(raw, &o); err != nil || o.URL == nil {
		return "", at + ".url", badRequest(at+".url", "%s.url: required (a base64 data URL or an http(s) URL)", at)
	}
	return *o.URL, at + ".url", nil
}

// mediaError is a 400 about one part's media.
func mediaError(param, format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, param: param, code: "invalid_media", msg: param + ": " + fmt.Sprintf(format, args...)}
}

// decodeSource returns the bytes a data: URL or bare base64 holds, at
// most max of them. Base64 in either alphabet (standard or URL-safe) is
// taken, padded or not, with line breaks or not. Its errors are for the
// user, without the field's name.
func decodeSource(s string, bare bool, max int64) ([]byte, error) {
	payload := s
	if !bare {
		rest, ok := strings.CutPrefix(s, "data:")
		if !ok {
			if len(s) >= 5 && strings.EqualFold(s[:5], "data:") {
				rest, ok = s[5:], true
			}
		}
		if !ok {
			return nil, errors.New("expected a data: URL")
		}
		meta, data, found := strings.Cut(rest, ",")
		if !found {
			return nil, errors.New("the data URL has no comma before its data (expected data:image/png;base64,…)")
		}
		if !isBase64Meta(meta) {
			return nil, errors.New("the data URL is not base64 (expected data:image/png;base64,…)")
		}
		payload = data
	}
	return decodeBase64(payload, max)
}

// isBase64Meta reports whether a data URL's header (between "data:" and
// the comma) ends in ";base64".
func isBase64Meta(meta string) bool {
	params := strings.Split(meta, ";")
	return len(params) > 1 && strings.EqualFold(strings.TrimSpace(params[len(params)-1]), "base64")
}

// decodeBase64 decodes s, refusing more than max bytes before decoding.
func decodeBase64(s string, max int64) ([]byte, error) {
	if strings.ContainsAny(s, " \t\r\n") {
		s = strings.Map(func(r rune) rune {
			switch r {
			case ' ', '\t', '\r', '\n':
				return -1
			}
			return r
		}, s)
	}
	s = strings.TrimRight(s, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.RawURLEncoding
	}
	if n := int64(enc.DecodedLen(len(s))); n > max {
		return nil, &tooLarge{n: n, max: max}
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		var ce base64.CorruptInputError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("not valid base64 (at character %d)", int64(ce))
		}
		return nil, fmt.Errorf("not valid base64: %v", err)
	}
	return b, nil
}

// tooLarge is media over its byte limit; n is its size, or 0 when only
// "more than max" is known (a download cut short).
type tooLarge struct{ n, max int64 }

func (e *tooLarge) size() string {
	switch {
	case e.n <= 0:
		return "more than " + mib(e.max)
	case mib(e.n) == mib(e.max) || strings.TrimSuffix(mib(e.n), ".0 MiB") == strings.TrimSuffix(mib(e.max), " MiB"):
		return fmt.Sprintf("%d bytes", e.n) // just over: the units would hide it
	}
	return mib(e.n)
}

func (e *tooLarge) Error() string {
	return fmt.Sprintf("%s is over the limit of %s", e.size(), mib(e.max))
}

// mib writes a byte count in binary units, as the limits are set.
func mib(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// takesImages reports whether the model serves images: its engine says
// so (the vision tower is present and its family runs it).
func (s *Server) takesImages(info engine.Info) bool {
	return hasCap(info, "vision") || s.opt.Media.assumeVision
}

// mediaNoun names what a request's media parts are, for messages: "images"
// when they all are, else "media parts".
func mediaNoun(refs []mediaRef) string {
	for _, r := range refs {
		if r.kind != kindImage {
			return "media parts"
		}
	}
	return "images"
}

// noMedia is the 400 for media sent to a model that takes none: it names
// the model, and the first part as its param (the web chat marks that
// message).
func noMedia(ref mediaRef, model string, kind mediaKind) error {
	what, capability := "images", "vision"
	switch kind {
	case kindVideo:
		what, capability = "video", "video"
	case kindAudio:
		what, capability = "audio", "audio"
	}
	return &apiError{status: http.StatusBadRequest, param: ref.at, code: "model_not_multimodal",
		msg: fmt.Sprintf("%s: model %q takes no %s (it has no %s capability); send text only, or choose a model whose capabilities include %s", ref.at, model, what, capability, capability)}
}

// loadMedia reads and decodes t's media for the model info describes,
// into t.req.Images. A model without vision is refused before anything
// is decoded; then each part is checked against the limits in order: the
// number of images, the bytes of the part and of the whole request, then
// the decode (pixels from the header first). Every failure that is the
// input's is a 400 naming the part.
func (s *Server) loadMedia(ctx context.Context, info engine.Info, t *target) error {
	if len(t.media) == 0 {
		return nil
	}
	for _, ref := range t.media {
		if ref.kind == kindAudio && !hasCap(info, "audio") || ref.kind == kindImage && !s.takesImages(info) ||
			ref.kind == kindVideo && !hasCap(info, "video") && !s.opt.Media.assumeVision {
			return noMedia(ref, info.ID, ref.kind)
		}
	}
	lim := s.opt.Media
	if len(t.media) > lim.Images {
		ref := t.media[lim.Images]
		return mediaError(ref.at, "too many %s: at most %d media parts per request (an image, a video or an audio clip each counts as one), got %d", mediaNoun(t.media), lim.Images, len(t.media))
	}
	var total int64
	images := make([]media.Image, 0, len(t.media))
	for _, ref := range t.media {
		data, err := s.mediaBytes(ctx, ref)
		if err != nil {
			return err
		}
		if total += int64(len(data)); total > lim.RequestBytes {
			return mediaError(ref.at, "the request's images and video add up to more than %s with this %s (%s); at most %s per request", mib(lim.RequestBytes), ref.kind, mib(int64(len(data))), mib(lim.RequestBytes))
		}
		switch ref.kind {
		case kindImage:
			img, err := media.DecodeImage(data, media.Limits{MaxBytes: lim.PartBytes, MaxPixels: lim.Pixels})
			if err != nil {
				return decodeError(ref, err)
			}
			images = append(images, img)
		case kindVideo:
			frames, err := s.videoFrames(ctx, ref, data, info.VideoSampling)
			if err != nil {
				return err
			}
			t.req.Videos = append(t.req.Videos, frames)
		case kindAudio:
			clip, err := media.DecodeAudio(ctx, data, media.AudioLimits{MaxBytes: lim.PartBytes})
			if err != nil {
				return decodeError(ref, err)
			}
			// the engine cuts a longer clip, as the model's extractor
			// does; the answer says so (X-Hearth-Warning)
			if limit, secs := info.AudioSeconds, clip.Duration().Seconds(); limit > 0 && secs > limit {
				t.warnings = append(t.warnings, fmt.Sprintf("%s: the audio clip is %.1f s long; model %q hears its first %g s", ref.at, secs, info.ID, limit))
			}
			t.req.Audio = append(t.req.Audio, clip)
		}
	}
	t.req.Images = images
	return nil
}

// decodeError is the answer to a failed decode: the input's fault (a
// media.ErrMedia) is a 400 with media's message, anything else fails the
// request.
func decodeError(ref mediaRef, err error) error {
	if errors.Is(err, media.ErrMedia) {
		return mediaError(ref.at, "%s", mediaMessage(err))
	}
	return fmt.Errorf("%s: decode %s: %w", ref.at, ref.kind, err)
}

// mediaMessage is a media error's message without the package's prefix.
func mediaMessage(err error) string {
	return strings.TrimPrefix(err.Error(), media.ErrMedia.Error()+": ")
}

// mediaBytes returns a part's encoded bytes (at most the part limit):
// its base64 decoded, or its URL fetched when the server allows it.
func (s *Server) mediaBytes(ctx context.Context, ref mediaRef) ([]byte, error) {
	lim := s.opt.Media
	if !ref.bare {
		if scheme, _, _ := strings.Cut(ref.data, ":"); !strings.EqualFold(scheme, "data") {
			if !lim.FetchURLs {
				return nil, &apiError{status: http.StatusBadRequest, param: ref.src, code: "media_url_disabled",
					msg: fmt.Sprintf("%s: this server does not fetch %s URLs (URL fetching is off); send the %s itself as a base64 data URL (data:%s/…;base64,…), or start hearth serve with --allow-media-urls", ref.src, ref.kind, ref.kind, ref.kind)}
			}
			data, err := s.fetchMedia(ctx, ref.data, lim.PartBytes)
			return checkBytes(ref, data, err)
		}
	}
	data, err := decodeSource(ref.data, ref.bare, lim.PartBytes)
	return checkBytes(ref, data, err)
}

// checkBytes sorts out a read part: over the part limit, empty, or
// unreadable are 400s naming it.
func checkBytes(ref mediaRef, data []byte, err error) ([]byte, error) {
	var tl *tooLarge
	switch {
	case errors.As(err, &tl):
		return nil, mediaError(ref.src, "the %s is %s; at most %s per %s", ref.kind, tl.size(), mib(tl.max), ref.kind)
	case err != nil:
		var ae *apiError
		if errors.As(err, &ae) || errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, mediaError(ref.src, "%v", err)
	case len(data) == 0:
		return nil, mediaError(ref.src, "the %s is empty (0 bytes)", ref.kind)
	}
	return data, nil
}

// videoFrames decodes a video part's frames under the limits, sampled
// as Qwen3-VL's video processor samples them (2 a second, at least 4, at
// most the frame limit), so that a clip that is corrupt, too long to
// decode or not a video is a 400 naming the part, as is a server with no
// video decoder (no ffmpeg).
//
// sampling, when not nil, is the model's own rule (Gemma 4's num_frames).
func (s *Server) videoFrames(ctx context.Context, ref mediaRef, data []byte, sampling *media.VideoOptions) ([]media.Frame, error) {
	lim := s.opt.Media
	opt := media.VideoOptions{MaxFrames: lim.Frames, MaxBytes: lim.PartBytes}
	if sampling != nil {
		opt.Sampling, opt.NumFrames, opt.FPS = sampling.Sampling, sampling.NumFrames, sampling.FPS
	}
	frames, err := media.VideoFrames(ctx, data, opt)
	switch {
	case err == nil:
		return frames, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, media.ErrNoVideoDecoder):
		return nil, &apiError{status: http.StatusBadRequest, param: ref.at, code: "video_decoder_unavailable",
			msg: fmt.Sprintf("%s: this server cannot decode video (%v); send frames as images instead", ref.at, err)}
	}
	return nil, decodeError(ref, err)
}
