package main

import (
	"path/filepath"

	"hearth/engine/pool"
	"hearth/internal/testmodels"
)

// temporaryDefaultModel is the model `hearth serve` loads when none is
// configured, until assets/ embeds the starter model: the chat-tiny test
// fixture of this repository (testdata/models/chat-tiny), found through
// the source tree, so it works with `go run ./app` and `go test` in a
// checkout and not from a copied binary. Its weights are random: it
// speaks real tokens but produces no meaningful text.
func temporaryDefaultModel() pool.Model {
	dir := filepath.Join(testmodels.Root(), "chat-tiny")
	return pool.Model{ID: "chat-tiny", Dir: dir}
}
