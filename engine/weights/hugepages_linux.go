// Checkpoint copies in transparent-huge-page memory (Linux).

package weights

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"github.com/shirou/gopsutil/v4/mem"
)

const (
	hugePage     = 2 << 20
	madvHugePage = 14 // MADV_HUGEPAGE
)

// hugeHeadroom is the memory readHuge leaves available after a copy: the
// copy is anonymous memory the kernel cannot drop under pressure (as it can
// a file's pages), so a checkpoint that would not leave this much is mapped
// instead.
const hugeHeadroom = 1 << 30

// readHuge reads the file at path into anonymous memory advised for
// transparent huge pages (2 MB pages, so streaming the weights takes one
// TLB entry per 2 MB instead of per 4 KB). It returns the data, starting
// on a 2 MB boundary, and the whole mapping that holds it (for freeAnon);
// whole is nil, with nothing allocated, when the kernel's THP mode is
// "never", the file is smaller than one huge page, or the copy would leave
// under hugeHeadroom of memory available: the caller maps the file then.
func readHuge(path string) (data, whole []byte, err error) {
	if !thpUsable() {
		return nil, nil, nil
	}
	f, size, err := openSized(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if size < hugePage || int64(size)+hugeHeadroom > memAvailable() {
		return nil, nil, nil
	}
	// One huge page more than needed, so the data can start on a 2 MB
	// boundary (the untouched slack costs address space only).
	n := (size + hugePage - 1) &^ (hugePage - 1)
	whole, err = allocAnon(n + hugePage)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	off := int(-uintptr(unsafe.Pointer(&whole[0])) & (hugePage - 1))
	// Advice only: a kernel that cannot give huge pages gives 4 KB ones.
	syscall.Madvise(whole[off:off+n], madvHugePage)
	data = whole[off : off+size : off+size]
	if _, err := io.ReadFull(f, data); err != nil {
		freeAnon(whole)
		return nil, nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return data, whole, nil
}

// thpUsable reports whether madvised memory can get transparent huge
// pages: the mode is "always" or "madvise", not "never" (or absent).
func thpUsable() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && !bytes.Contains(b, []byte("[never]"))
}

// memAvailable is the memory available without swapping (MemAvailable,
// read by gopsutil as fit.System reads it), in bytes, or 0.
func memAvailable() int64 {
	v, err := mem.VirtualMemory()
	if err != nil {
		return 0
	}
	return int64(v.Available)
}
