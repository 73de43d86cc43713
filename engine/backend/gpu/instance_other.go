//go:build !linux

package gpu

// quietLayers has nothing to quiet: Mesa's Vulkan layers are Linux's.
func quietLayers() {}
