package gpu

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// TestInstanceLayout checks that wgpu.Instance is still one C handle,
// which newInstance fills in through instanceHandle.
func TestInstanceLayout(t *testing.T) {
	typ := reflect.TypeOf(wgpu.Instance{})
	if typ.NumField() != 1 || typ.Field(0).Type.Kind() != reflect.Pointer ||
		typ.Size() != unsafe.Sizeof(instanceHandle{}) {
		t.Fatalf("wgpu.Instance is %v with %d fields: newInstance's instanceHandle no longer matches the binding", typ.Size(), typ.NumField())
	}
}

// TestInstanceBackend checks that the instance made with only Vulkan and
// Metal finds the adapter, on the platform's own API.
func TestInstanceBackend(t *testing.T) {
	b := newBackend(t, Options{})
	want := map[string]string{"linux": "vulkan", "darwin": "metal"}[runtime.GOOS]
	if got := b.Adapter().Backend; want != "" && got != want {
		t.Errorf("adapter %q runs on %q, want %q", b.Adapter().Name, got, want)
	}
}
