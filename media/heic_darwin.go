// HEIC through ImageIO, and the CGImage-to-RGB conversion that video
// frames from AVFoundation use too. Written against Apple's documented
// API; it has not run on a Mac (docs/macos.md).

//go:build cgo

package media

/*
#cgo CFLAGS: -x objective-c
#cgo LDFLAGS: -framework ImageIO -framework CoreGraphics -framework CoreFoundation
#include <ImageIO/ImageIO.h>
#include <CoreGraphics/CoreGraphics.h>
#include <CoreFoundation/CoreFoundation.h>

// hearthSource opens an image source over a copy of data (the source
// outlives the call, so it may not keep Go's memory).
static CGImageSourceRef hearthSource(const void *data, long n) {
	CFDataRef d = CFDataCreate(kCFAllocatorDefault, (const UInt8 *)data, (CFIndex)n);
	if (d == NULL) return NULL;
	CGImageSourceRef src = CGImageSourceCreateWithData(d, NULL);
	CFRelease(d);
	return src;
}

// hearthLong reads a number property; 0 when absent.
static long hearthLong(CFDictionaryRef p, CFStringRef key) {
	long v = 0;
	CFNumberRef n = (CFNumberRef)CFDictionaryGetValue(p, key);
	if (n != NULL && CFGetTypeID(n) == CFNumberGetTypeID()) CFNumberGetValue(n, kCFNumberLongType, &v);
	return v;
}

// hearthProps reads the primary image's index and pixel size from its
// properties, decoding no pixel. 0 when the source holds no image.
static int hearthProps(CGImageSourceRef src, size_t *index, long *w, long *h) {
	if (CGImageSourceGetStatus(src) != kCGImageStatusComplete || CGImageSourceGetCount(src) < 1) return 0;
	*index = CGImageSourceGetPrimaryImageIndex(src);
	CFDictionaryRef p = CGImageSourceCopyPropertiesAtIndex(src, *index, NULL);
	if (p == NULL) return 0;
	*w = hearthLong(p, kCGImagePropertyPixelWidth);
	*h = hearthLong(p, kCGImagePropertyPixelHeight);
	CFRelease(p);
	return *w > 0 && *h > 0;
}

// hearthOriented decodes image index at full size with its orientation
// applied: ImageIO applies it only to thumbnails
// (kCGImageSourceCreateThumbnailWithTransform), so this asks for a
// thumbnail made from the full image, as large as the image.
static CGImageRef hearthOriented(CGImageSourceRef src, size_t index, long maxSide) {
	CFMutableDictionaryRef o = CFDictionaryCreateMutable(kCFAllocatorDefault, 0, &kCFTypeDictionaryKeyCallBacks, &kCFTypeDictionaryValueCallBacks);
	if (o == NULL) return NULL;
	CFDictionarySetValue(o, kCGImageSourceCreateThumbnailFromImageAlways, kCFBooleanTrue);
	CFDictionarySetValue(o, kCGImageSourceCreateThumbnailWithTransform, kCFBooleanTrue);
	CFDictionarySetValue(o, kCGImageSourceShouldCacheImmediately, kCFBooleanTrue);
	CFNumberRef m = CFNumberCreate(kCFAllocatorDefault, kCFNumberLongType, &maxSide);
	if (m != NULL) {
		CFDictionarySetValue(o, kCGImageSourceThumbnailMaxPixelSize, m);
		CFRelease(m);
	}
	CGImageRef img = CGImageSourceCreateThumbnailAtIndex(src, index, o);
	CFRelease(o);
	return img;
}

// hearthDraw draws img into buf (w×h, four bytes a pixel: R, G, B, unused)
// in the image's own RGB colour space, so that no colour is converted
// (PIL and ffmpeg convert none), or in sRGB when the image's space is not
// RGB (grey, CMYK) or no bitmap context takes it. 0 on failure.
static int hearthDraw(CGImageRef img, void *buf, size_t w, size_t h) {
	const CGBitmapInfo info = kCGImageAlphaNoneSkipLast | kCGBitmapByteOrder32Big;
	CGColorSpaceRef cs = CGImageGetColorSpace(img);
	CGContextRef ctx = NULL;
	if (cs != NULL && CGColorSpaceGetModel(cs) == kCGColorSpaceModelRGB) {
		ctx = CGBitmapContextCreate(buf, w, h, 8, w * 4, cs, info);
	}
	if (ctx == NULL) {
		CGColorSpaceRef srgb = CGColorSpaceCreateWithName(kCGColorSpaceSRGB);
		if (srgb == NULL) return 0;
		ctx = CGBitmapContextCreate(buf, w, h, 8, w * 4, srgb, info);
		CGColorSpaceRelease(srgb);
	}
	if (ctx == NULL) return 0;
	CGContextSetBlendMode(ctx, kCGBlendModeCopy);
	CGContextSetInterpolationQuality(ctx, kCGInterpolationNone);
	CGContextDrawImage(ctx, CGRectMake(0, 0, (CGFloat)w, (CGFloat)h), img);
	CGContextRelease(ctx);
	return 1;
}

static size_t hearthImageWidth(CGImageRef img) { return CGImageGetWidth(img); }
static size_t hearthImageHeight(CGImageRef img) { return CGImageGetHeight(img); }
static void hearthImageRelease(CGImageRef img) { CGImageRelease(img); }
static void hearthSourceRelease(CGImageSourceRef src) { CFRelease(src); }
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// decodeHEIC decodes an iPhone photo through ImageIO
// (CGImageSourceCreateWithData): the primary image, its size checked
// against the limit from the properties before any pixel is decoded,
// its EXIF orientation applied, as 8-bit RGB in its own colour space.
func decodeHEIC(data []byte, lim Limits) (Image, error) {
	maxPixels := lim.MaxPixels
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}
	if lim.MaxBytes > 0 && int64(len(data)) > lim.MaxBytes {
		return Image{}, fmt.Errorf("%w: image: HEIC: the file is %d bytes, over the %d-byte limit", ErrMedia, len(data), lim.MaxBytes)
	}
	if len(data) == 0 {
		return Image{}, fmt.Errorf("%w: image: HEIC: the file is empty", ErrMedia)
	}
	src := C.hearthSource(unsafe.Pointer(&data[0]), C.long(len(data)))
	if src == nil {
		return Image{}, fmt.Errorf("%w: image: HEIC: ImageIO cannot read the file", ErrMedia)
	}
	defer C.hearthSourceRelease(src)

	var index C.size_t
	var w, h C.long
	if C.hearthProps(src, &index, &w, &h) == 0 {
		return Image{}, fmt.Errorf("%w: image: HEIC: ImageIO finds no image in the file (corrupt or truncated)", ErrMedia)
	}
	if px := int64(w) * int64(h); px > int64(maxPixels) {
		return Image{}, fmt.Errorf("%w: image: HEIC: the image is %d×%d (%d pixels), over the %d-pixel limit", ErrMedia, int64(w), int64(h), px, maxPixels)
	}
	img := C.hearthOriented(src, index, C.long(max(w, h)))
	if img == nil {
		return Image{}, fmt.Errorf("%w: image: HEIC: ImageIO could not decode the image", ErrMedia)
	}
	defer C.hearthImageRelease(img)
	im, err := rgbFromCGImage(unsafe.Pointer(img), maxPixels)
	if err != nil {
		return Image{}, fmt.Errorf("%w: image: HEIC: %v", ErrMedia, err)
	}
	return im, nil
}

// rgbFromCGImage copies a CGImage (passed as a pointer: the video file's
// cgo types are its own) into an Image, refusing one over maxPixels. Its
// errors are the caller's to wrap.
func rgbFromCGImage(ptr unsafe.Pointer, maxPixels int) (Image, error) {
	img := C.CGImageRef(ptr)
	w, h := int(C.hearthImageWidth(img)), int(C.hearthImageHeight(img))
	if w <= 0 || h <= 0 {
		return Image{}, errors.New("the decoded picture is empty")
	}
	if int64(w)*int64(h) > int64(maxPixels) {
		return Image{}, fmt.Errorf("the decoded picture is %d×%d, over the %d-pixel limit", w, h, maxPixels)
	}
	rgbx := make([]byte, 4*w*h)
	if C.hearthDraw(img, unsafe.Pointer(&rgbx[0]), C.size_t(w), C.size_t(h)) == 0 {
		return Image{}, fmt.Errorf("CoreGraphics could not convert the %d×%d picture to RGB", w, h)
	}
	pix := make([]uint8, 3*w*h)
	for p := range w * h {
		copy(pix[3*p:3*p+3], rgbx[4*p:4*p+3])
	}
	return Image{Width: w, Height: h, Pix: pix}, nil
}
