// Launch at login on macOS: a LaunchAgent in ~/Library/LaunchAgents.

package main

// newLoginItem returns the LaunchAgent that starts exe's menu at login.
func newLoginItem(env getenv, exe string) (loginItem, error) {
	if err := checkLoginExe(exe); err != nil {
		return loginItem{}, err
	}
	home, err := homeDir(env)
	if err != nil {
		return loginItem{}, err
	}
	return launchAgent(home, exe, []string{"menu"}), nil
}
