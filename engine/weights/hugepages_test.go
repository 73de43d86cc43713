//go:build linux

package weights

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"unsafe"

	"hearth/engine/tensor"
)

// TestOpenHugePages opens a checkpoint larger than a huge page with and
// without OpenOptions.HugePages: the bytes must match, and on Linux with
// THP available the copy must be what holds them, starting on a 2 MB
// boundary.
func TestOpenHugePages(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	big := make([]byte, 3<<20+123*4)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	ws := []tensor.Weight{
		{Name: "big", DType: tensor.F32, Shape: []int{len(big) / 4}, Data: big},
		{Name: "small", DType: tensor.F32, Shape: []int{3}, Data: big[:12]},
	}
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "model.safetensors"), ws, nil); err != nil {
		t.Fatal(err)
	}
	mapped, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()
	huge, err := OpenWith(dir, OpenOptions{HugePages: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"big", "small"} {
		a, _ := mapped.Bytes(name)
		b, ok := huge.Bytes(name)
		if !ok || !bytes.Equal(a, b) {
			t.Errorf("%s: huge-page copy differs from the mapping", name)
		}
	}
	if thpUsable() && memAvailable() > 2*hugeHeadroom {
		if huge.huge[0] == nil {
			t.Fatal("HugePages on Linux with THP: the file was mapped, not copied")
		}
		if p := uintptr(unsafe.Pointer(&huge.maps[0][0])); p%hugePage != 0 {
			t.Errorf("copy starts at %#x, not on a 2 MB boundary", p)
		}
	}
	if err := huge.Close(); err != nil {
		t.Fatal(err)
	}
}
