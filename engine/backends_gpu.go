//go:build cgo && ((linux && amd64) || (darwin && arm64))

package engine

import (
	"fmt"

	"hearth/engine/backend/gpu"
	"hearth/engine/tensor"
)

// newGPU makes the WebGPU backend (Metal on macOS, Vulkan on Linux).
// With auto, it declines (nil, nil) when the only adapter is a CPU
// emulation such as lavapipe, which is slower than the cpu backend; asked
// for by name, it runs there and the device name says so, since
// Model.Backend is what the start lines print.
func newGPU(auto bool) (tensor.Backend, string, error) {
	if auto {
		a, err := gpu.Probe()
		if err != nil || a.Emulated {
			return nil, "", nil
		}
	}
	b, err := gpu.New(gpu.Options{})
	if err != nil {
		return nil, "", fmt.Errorf("gpu backend: %w", err)
	}
	a := b.Adapter()
	if a.Emulated {
		return b, a.Name + ", " + EmulatedNote, nil
	}
	return b, a.Name, nil
}
