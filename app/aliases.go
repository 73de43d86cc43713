package main

import (
	"os"
	"path/filepath"
)

// aliasPath is the file of the registry's alias table (the names POST
// /api/copy gives models): $XDG_CONFIG_HOME/hearth/aliases.json, else the
// platform's config directory (~/.config on Linux, ~/Library/Application
// Support on macOS). Aliases are the user's own names, not something that
// can be fetched again, so they live beside settings rather than in a
// cache; "" (no aliases) when there is no such directory.
func (c *cli) aliasPath() string {
	root := c.env.Getenv("XDG_CONFIG_HOME")
	if root == "" {
		var err error
		if root, err = os.UserConfigDir(); err != nil {
			return ""
		}
	}
	return filepath.Join(root, "hearth", "aliases.json")
}
