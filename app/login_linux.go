// Launch at login on Linux: an XDG autostart entry.

package main

import "path/filepath"

// newLoginItem returns the autostart entry that starts exe's menu at
// login, in $XDG_CONFIG_HOME/autostart (~/.config/autostart).
func newLoginItem(env getenv, exe string) (loginItem, error) {
	if err := checkLoginExe(exe); err != nil {
		return loginItem{}, err
	}
	cfg := env.Getenv("XDG_CONFIG_HOME")
	if cfg == "" || !filepath.IsAbs(cfg) {
		home, err := homeDir(env)
		if err != nil {
			return loginItem{}, err
		}
		cfg = filepath.Join(home, ".config")
	}
	return xdgAutostart(cfg, exe, []string{"menu"}), nil
}
