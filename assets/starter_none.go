//go:build nostarter

package assets

import "embed"

// starter is empty in a binary built with -tags nostarter (about 24 MB
// smaller; tools/gpubench carries one to the device machine, whose
// upload is capped).
var starter embed.FS
