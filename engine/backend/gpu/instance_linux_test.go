package gpu

import "testing"

func TestSkipDeviceSelect(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"no session", map[string]string{}, true},
		{"no session, a display", map[string]string{"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}, true},
		{"relative runtime dir", map[string]string{"XDG_RUNTIME_DIR": "run/user/0"}, true},
		{"empty runtime dir", map[string]string{"XDG_RUNTIME_DIR": ""}, true},
		{"a session", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, false},
		{"device asked for", map[string]string{"MESA_VK_DEVICE_SELECT": "10de:2335"}, false},
		{"prime", map[string]string{"DRI_PRIME": "1"}, false},
		{"user's switch", map[string]string{"NODEVICE_SELECT": "0"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			if got := skipDeviceSelect(lookup); got != tt.want {
				t.Errorf("skipDeviceSelect(%v) = %v, want %v", tt.env, got, tt.want)
			}
		})
	}
}
