package gpu

import (
	"os"
	"strings"
	"sync"
)

var quietOnce sync.Once

// quietLayers turns off Mesa's device-select layer where it would print
// (see skipDeviceSelect). The Vulkan loader reads NODEVICE_SELECT, the
// layer's own switch, when the instance is made.
func quietLayers() {
	quietOnce.Do(func() {
		if skipDeviceSelect(os.LookupEnv) {
			os.Setenv("NODEVICE_SELECT", "1")
		}
	})
}

// skipDeviceSelect reports whether Mesa's device-select layer should be
// turned off. Debian's and Ubuntu's mesa-vulkan-drivers install it as an
// implicit Vulkan layer; to find the GPU that drives the user's display it
// calls wl_display_connect on every vkEnumeratePhysicalDevices, and
// libwayland prints "error: XDG_RUNTIME_DIR is invalid or not set in the
// environment." to stderr unless XDG_RUNTIME_DIR is an absolute path:
// on a machine with no login session (a server, a container, a systemd
// unit). There is no display to match there, and pickAdapter ranks the
// adapters itself, so the layer goes, unless the user asked it for a
// device (MESA_VK_DEVICE_SELECT, DRI_PRIME) or set NODEVICE_SELECT.
func skipDeviceSelect(lookup func(string) (string, bool)) bool {
	if dir, _ := lookup("XDG_RUNTIME_DIR"); strings.HasPrefix(dir, "/") {
		return false
	}
	for _, k := range []string{"MESA_VK_DEVICE_SELECT", "DRI_PRIME", "NODEVICE_SELECT"} {
		if _, set := lookup(k); set {
			return false
		}
	}
	return true
}
