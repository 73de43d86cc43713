//go:build !(darwin && cgo)

package media

import "fmt"

// decodeHEIC needs the platform's codec, which only macOS gives us (and
// only to a cgo build).
func decodeHEIC([]byte, Limits) (Image, error) {
	return Image{}, fmt.Errorf("%w: HEIC images are decoded on macOS only; send JPEG or PNG", ErrMedia)
}
