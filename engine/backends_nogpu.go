//go:build !(cgo && ((linux && amd64) || (darwin && arm64)))

package engine

import (
	"errors"

	"hearth/engine/tensor"
)

// newGPU reports that this build has no GPU backend: wgpu-native ships for
// linux/amd64 and darwin/arm64, through cgo.
func newGPU(auto bool) (tensor.Backend, string, error) {
	if auto {
		return nil, "", nil
	}
	return nil, "", errors.New("this build has no gpu backend (it needs cgo on linux/amd64 or darwin/arm64)")
}
