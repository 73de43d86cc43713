//go:build nostarter

package assets

import "embed"

// starter is empty in a binary built with -tags nostarter (about 24 MB
// smaller; tools/gpubench carries one to the device machine, whose
// upload is capped). Such a binary is for `hearth bench` and serving named
// models: without a model named it has nothing to serve, and the tests
// that serve the starter model fail under this tag.
var starter embed.FS
