// Video through AVFoundation (darwinkit for the objects, a cgo shim for
// what darwinkit v0.5.0 does not bind: AVAssetReader's sample loop,
// copyCGImageAtTime and CoreGraphics). Written against Apple's
// documented API; it has not run on a Mac (docs/macos.md).

//go:build cgo

package media

/*
#cgo CFLAGS: -x objective-c -Wno-deprecated-declarations
#cgo LDFLAGS: -framework AVFoundation -framework CoreMedia -framework CoreGraphics -framework Foundation
#import <AVFoundation/AVFoundation.h>
#import <CoreMedia/CoreMedia.h>
#include <stdlib.h>
#include <string.h>

// hearthErrString copies an error's description (or fallback) into a
// malloc'd C string, which Go frees.
static char *hearthErrString(NSError *e, const char *fallback) {
	const char *s = e != nil ? e.localizedDescription.UTF8String : NULL;
	return strdup(s != NULL ? s : fallback);
}

// hearthSampleTimes lists the presentation time of every sample of the
// video track, reading the compressed samples (nothing is decoded) with
// an AVAssetReader: the frame count and numbering torchcodec gets by
// scanning. It returns how many, with *values and *scales malloc'd (one
// CMTime each), or -1 with *err set. It stops at limit samples.
static long hearthSampleTimes(void *asset, void *track, long limit, int64_t **values, int32_t **scales, char **err) {
	@autoreleasepool {
		NSError *e = nil;
		AVAssetReader *r = [[AVAssetReader alloc] initWithAsset:(AVAsset *)asset error:&e];
		if (r == nil) {
			*err = hearthErrString(e, "AVAssetReader could not open the file");
			return -1;
		}
		AVAssetReaderTrackOutput *o = [[AVAssetReaderTrackOutput alloc] initWithTrack:(AVAssetTrack *)track outputSettings:nil];
		o.alwaysCopiesSampleData = NO;
		if (![r canAddOutput:o]) {
			*err = strdup("AVAssetReader cannot read the video track");
			[o release];
			[r release];
			return -1;
		}
		[r addOutput:o];
		if (![r startReading]) {
			*err = hearthErrString(r.error, "AVAssetReader could not start");
			[o release];
			[r release];
			return -1;
		}
		long n = 0, cap = 1024;
		int64_t *v = malloc(cap * sizeof *v);
		int32_t *s = malloc(cap * sizeof *s);
		CMSampleBufferRef sb;
		while (n <= limit && (sb = [o copyNextSampleBuffer]) != NULL) {
			CMItemCount k = CMSampleBufferGetNumSamples(sb);
			for (CMItemIndex i = 0; i < k && n <= limit; i++) {
				CMSampleTimingInfo ti;
				if (CMSampleBufferGetSampleTimingInfo(sb, i, &ti) != noErr || !CMTIME_IS_NUMERIC(ti.presentationTimeStamp)) continue;
				if (n == cap) {
					cap *= 2;
					v = realloc(v, cap * sizeof *v);
					s = realloc(s, cap * sizeof *s);
				}
				v[n] = ti.presentationTimeStamp.value;
				s[n] = ti.presentationTimeStamp.timescale;
				n++;
			}
			CFRelease(sb);
		}
		if (r.status == AVAssetReaderStatusFailed) {
			*err = hearthErrString(r.error, "AVAssetReader failed");
			free(v);
			free(s);
			n = -1;
		} else {
			*values = v;
			*scales = s;
		}
		[r cancelReading];
		[o release];
		[r release];
		return n;
	}
}

// hearthCopyImage is the frame shown at value/scale exactly (the
// generator's tolerances are zero), or NULL with *err set.
static CGImageRef hearthCopyImage(void *generator, int64_t value, int32_t scale, char **err) {
	@autoreleasepool {
		NSError *e = nil;
		CGImageRef img = [(AVAssetImageGenerator *)generator copyCGImageAtTime:CMTimeMake(value, scale) actualTime:NULL error:&e];
		if (img == NULL) *err = hearthErrString(e, "no frame at that time");
		return img;
	}
}

static void hearthReleaseImage(CGImageRef img) { CGImageRelease(img); }
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"unsafe"

	"github.com/progrium/darwinkit/macos/avfoundation"
	"github.com/progrium/darwinkit/macos/coregraphics"
	"github.com/progrium/darwinkit/macos/coremedia"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"
)

// videoDecoder names this build's decoder.
const videoDecoder = "avfoundation"

// sampleTime is one frame's presentation time, as CoreMedia keeps it.
type sampleTime struct {
	value int64
	scale int32
}

func (t sampleTime) seconds() float64 { return float64(t.value) / float64(t.scale) }

func decodeVideo(ctx context.Context, path string, opt VideoOptions) ([]Frame, error) {
	// Autorelease pools belong to a thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var frames []Frame
	var err error
	objc.WithAutoreleasePool(func() { frames, err = decodeAV(ctx, path, opt) })
	return frames, err
}

// decodeAV opens path as an AVURLAsset, takes its first video track,
// lists its frames' presentation times, and asks an
// AVAssetImageGenerator (zero tolerance, the track's transform applied)
// for the sampled ones.
func decodeAV(ctx context.Context, path string, opt VideoOptions) ([]Frame, error) {
	asset := avfoundation.URLAsset_AssetWithURL(foundation.URL_FileURLWithPath(path))
	if asset.IsNil() {
		return nil, fmt.Errorf("%w: video: not a video macOS can read", ErrMedia)
	}
	var track avfoundation.AssetTrack
	found := false
	for _, t := range asset.Tracks() {
		if t.MediaType() == avfoundation.MediaTypeVideo {
			track, found = t, true
			break
		}
	}
	if !found {
		if !asset.IsReadable() && len(asset.Tracks()) == 0 {
			return nil, fmt.Errorf("%w: video: not a video macOS can read (no video stream in the file)", ErrMedia)
		}
		return nil, errNoVideo
	}

	times, err := sampleTimes(asset, track)
	if err != nil {
		return nil, err
	}
	w, h := shownSize(track.NaturalSize(), track.PreferredTransform())
	info := videoInfo{Width: w, Height: h, Frames: len(times), FPS: float64(track.NominalFrameRate())}
	if !(info.FPS > 0) || info.FPS > maxFPS {
		// No nominal rate: frames over the track's duration.
		r := track.TimeRange()
		if d := cmSeconds(r.Duration); d > 0 && float64(len(times))/d <= maxFPS {
			info.FPS = float64(len(times)) / d
		}
	}
	idx, err := planVideo(info, opt)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	gen := avfoundation.NewAssetImageGeneratorWithAsset(asset)
	gen.SetAppliesPreferredTrackTransform(true)
	gen.SetApertureMode(avfoundation.AssetImageGeneratorApertureModeEncodedPixels) // the decoded picture, as ffmpeg gives it
	zero := coremedia.Time{Value: 0, Timescale: 1, Flags: 1}                       // kCMTimeZero: kCMTimeFlags_Valid
	gen.SetRequestedTimeToleranceBefore(zero)
	gen.SetRequestedTimeToleranceAfter(zero)

	frames := make([]Frame, 0, len(idx))
	for _, i := range idx {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var cerr *C.char
		img := C.hearthCopyImage(gen.Ptr(), C.int64_t(times[i].value), C.int32_t(times[i].scale), &cerr)
		if img == nil {
			msg := C.GoString(cerr)
			C.free(unsafe.Pointer(cerr))
			return nil, fmt.Errorf("%w: video: AVFoundation could not decode frame %d (%s)", ErrMedia, i, msg)
		}
		im, err := rgbFromCGImage(unsafe.Pointer(img), opt.MaxPixels)
		C.hearthReleaseImage(img)
		if err != nil {
			return nil, fmt.Errorf("%w: video: frame %d: %v", ErrMedia, i, err)
		}
		frames = append(frames, Frame{Image: im, At: frameAt(i, info.FPS), Index: i, FPS: info.FPS})
	}
	return frames, nil
}

// sampleTimes is the track's frames' presentation times, in order: frame
// i of the reference's numbering is times[i].
func sampleTimes(asset avfoundation.URLAsset, track avfoundation.AssetTrack) ([]sampleTime, error) {
	var values *C.int64_t
	var scales *C.int32_t
	var cerr *C.char
	n := int(C.hearthSampleTimes(asset.Ptr(), track.Ptr(), C.long(maxStreamFrames), &values, &scales, &cerr))
	if n < 0 {
		msg := C.GoString(cerr)
		C.free(unsafe.Pointer(cerr))
		return nil, fmt.Errorf("%w: video: AVFoundation could not read the frames (%s)", ErrMedia, msg)
	}
	defer C.free(unsafe.Pointer(values))
	defer C.free(unsafe.Pointer(scales))
	if n > maxStreamFrames {
		return nil, fmt.Errorf("%w: video: more than %d frames", ErrMedia, maxStreamFrames)
	}
	times := make([]sampleTime, 0, n)
	if n > 0 {
		vs := unsafe.Slice((*int64)(unsafe.Pointer(values)), n)
		ss := unsafe.Slice((*int32)(unsafe.Pointer(scales)), n)
		for k := range n {
			if ss[k] > 0 {
				times = append(times, sampleTime{value: vs[k], scale: ss[k]})
			}
		}
	}
	// Samples come in decode order; frames are numbered in presentation
	// order.
	sort.SliceStable(times, func(a, b int) bool { return times[a].seconds() < times[b].seconds() })
	return times, nil
}

// shownSize is the track's natural size through its preferred transform
// (a phone's rotation): the size AVAssetImageGenerator's frames have.
func shownSize(s coregraphics.Size, t coregraphics.AffineTransform) (int, int) {
	w := math.Abs(t.M11*s.Width + t.M21*s.Height)
	h := math.Abs(t.M12*s.Width + t.M22*s.Height)
	return int(math.Round(w)), int(math.Round(h))
}

// cmSeconds is a CMTime in seconds; 0 when it is not a number.
func cmSeconds(t coremedia.Time) float64 {
	const valid = 1 // kCMTimeFlags_Valid
	if t.Flags&valid == 0 || t.Timescale <= 0 {
		return 0
	}
	return float64(t.Value) / float64(t.Timescale)
}
