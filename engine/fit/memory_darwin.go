// The GPU working-set limit on macOS.

package fit

/*
#cgo CFLAGS: -x objective-c
#cgo LDFLAGS: -framework Metal -framework Foundation -framework CoreGraphics
#import <Metal/Metal.h>

// hearthDefaultDevice returns the default Metal device, retained (the
// Create rule), or NULL on a Mac without one. CoreGraphics is linked
// because a process without it (a command-line tool) may get NULL.
static void *hearthDefaultDevice(void) { return (void *)MTLCreateSystemDefaultDevice(); }
*/
import "C"

import (
	"sync"

	"github.com/progrium/darwinkit/macos/metal"
	"github.com/progrium/darwinkit/objc"
)

// metalWorkingSet returns Metal's recommendedMaxWorkingSetSize for the
// default device (MTLCreateSystemDefaultDevice). It reports false when
// there is no Metal device.
func metalWorkingSet() (uint64, bool) { return workingSet() }

// workingSet reads the limit once: it is fixed for the machine.
var workingSet = sync.OnceValues(func() (uint64, bool) {
	ptr := C.hearthDefaultDevice()
	if ptr == nil {
		return 0, false
	}
	dev := metal.DeviceObject{Object: objc.ObjectFrom(ptr)}
	defer dev.Release()
	if !dev.HasRecommendedMaxWorkingSetSize() {
		return 0, false
	}
	return dev.RecommendedMaxWorkingSetSize(), true
})
