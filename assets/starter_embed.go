//go:build !nostarter

package assets

import "embed"

//go:embed starter
var starter embed.FS
