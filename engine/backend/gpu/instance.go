package gpu

/*
#include <stdint.h>
#include <string.h>

// The three structs below mirror wgpu.h and webgpu.h as shipped with
// github.com/cogentcore/webgpu v0.23.0 (wgpu/lib): WGPUChainedStruct,
// WGPUInstanceExtras and WGPUInstanceDescriptor. Their enum fields are
// 32-bit (each enum has a Force32 member), and the binding's cgo flags
// link the library that defines wgpuCreateInstance.
typedef struct hearthChained {
	const struct hearthChained *next;
	uint32_t sType;
} hearthChained;

typedef struct {
	hearthChained chain;
	uint32_t backends;
	uint32_t flags;
	uint32_t dx12ShaderCompiler;
	uint32_t gles3MinorVersion;
	const char *dxilPath;
	const char *dxcPath;
} hearthInstanceExtras;

typedef struct {
	const hearthChained *nextInChain;
} hearthInstanceDescriptor;

void *wgpuCreateInstance(const hearthInstanceDescriptor *descriptor);

enum { hearthSTypeInstanceExtras = 0x00030006 };

// hearthCreateInstance makes an instance with only the given backends
// (WGPUInstanceBackend flags), every other extra at its zero value.
static void *hearthCreateInstance(uint32_t backends) {
	hearthInstanceExtras extras;
	memset(&extras, 0, sizeof extras);
	extras.chain.sType = hearthSTypeInstanceExtras;
	extras.backends = backends;
	hearthInstanceDescriptor desc = {&extras.chain};
	return wgpuCreateInstance(&desc);
}
*/
import "C"

import (
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// instanceBackends are the wgpu backends an instance is made with: the
// ones pickAdapter accepts. Only one of them exists in each build of
// wgpu-native (Vulkan on Linux, Metal on macOS). Leaving out GL matters:
// wgpu's GL backend opens EGL, whose Wayland and X11 probes print
// "error: XDG_RUNTIME_DIR is invalid or not set" on a headless machine.
const instanceBackends = wgpu.InstanceBackendVulkan | wgpu.InstanceBackendMetal

// instanceHandle has the layout of wgpu.Instance, whose one field is the
// C handle; instance_test.go checks that the binding still has it.
type instanceHandle struct{ ref unsafe.Pointer }

// newInstance makes a wgpu instance with only instanceBackends.
//
// The binding's wgpu.CreateInstance cannot do it: with a descriptor it
// fills WGPUInstanceExtras from malloc and leaves the flags and the GLES
// version as garbage (which wgpu-native may reject with a panic), and
// without one wgpu-native starts every backend. So the instance is made
// here, with zeroed extras, and handed to the binding as its own type.
func newInstance() *wgpu.Instance {
	wgpu.SetLogLevel(wgpu.LogLevelError)
	quietLayers()
	ref := C.hearthCreateInstance(C.uint32_t(instanceBackends))
	if ref == nil {
		panic("gpu: wgpuCreateInstance returned no instance")
	}
	return (*wgpu.Instance)(unsafe.Pointer(&instanceHandle{ref: ref}))
}
