// Header parsing: the safetensors byte layout, validated against the size of
// the file it came from so that no later read can leave the file.

package weights

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"hearth/engine/tensor"
)

// maxHeaderBytes caps the JSON header, as the safetensors library does.
const maxHeaderBytes = 100 << 20

// rawEntry is one tensor's record in the JSON header.
type rawEntry struct {
	DType   *string `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// supportedDTypes lists the dtypes Hearth reads, for error messages.
func supportedDTypes() string {
	var names []string
	for d := tensor.F32; d <= tensor.Bool; d++ {
		names = append(names, d.String())
	}
	return strings.Join(names, ", ")
}

// parseHeader reads and validates the header of a safetensors file of size
// bytes, read through r. file is the base name recorded in each Info. The
// returned infos are sorted by name; their Offset is absolute in the file.
func parseHeader(r io.ReaderAt, size int64, file string) ([]Info, map[string]string, error) {
	if size < 8 {
		return nil, nil, fmt.Errorf("file has %d bytes, too few for a safetensors header (incomplete download?)", size)
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, nil, fmt.Errorf("read header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeaderBytes {
		return nil, nil, fmt.Errorf("header length %d is over the %d-byte limit (not a safetensors file?)", n, maxHeaderBytes)
	}
	if n > uint64(size-8) {
		return nil, nil, fmt.Errorf("header length %d runs past the end of the file (%d bytes; incomplete download?)", n, size)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, nil, fmt.Errorf("read header: %w", err)
	}
	dataStart := int64(8 + n)
	dataLen := size - dataStart

	entries, meta, err := decodeHeader(hdr)
	if err != nil {
		return nil, nil, err
	}
	infos := make([]Info, 0, len(entries))
	for name, e := range entries {
		info, err := checkEntry(name, e, dataStart, dataLen, size)
		if err != nil {
			return nil, nil, err
		}
		info.File = file
		infos = append(infos, info)
	}
	if err := checkOverlaps(infos); err != nil {
		return nil, nil, err
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	return infos, meta, nil
}

// decodeHeader splits the JSON header into tensor entries and metadata,
// refusing duplicate keys (which a plain map decode would silently merge).
func decodeHeader(hdr []byte) (map[string]rawEntry, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("header is not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("header is not a JSON object")
	}
	entries := map[string]rawEntry{}
	var meta map[string]string
	seenMeta := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("header is not JSON: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, nil, errors.New("header is not a JSON object")
		}
		if key == "__metadata__" {
			if seenMeta {
				return nil, nil, errors.New("header has __metadata__ twice")
			}
			seenMeta = true
			if err := dec.Decode(&meta); err != nil {
				if isSyntax(err) {
					return nil, nil, fmt.Errorf("header is not JSON: %w", err)
				}
				return nil, nil, fmt.Errorf("__metadata__ is not an object of strings: %w", err)
			}
			continue
		}
		if _, dup := entries[key]; dup {
			return nil, nil, fmt.Errorf("header lists tensor %q twice", key)
		}
		var e rawEntry
		if err := dec.Decode(&e); err != nil {
			if isSyntax(err) {
				return nil, nil, fmt.Errorf("header is not JSON: %w", err)
			}
			return nil, nil, fmt.Errorf("tensor %q: %w", key, err)
		}
		entries[key] = e
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, fmt.Errorf("header is not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("header has bytes after its JSON object")
	}
	return entries, meta, nil
}

// isSyntax reports whether a decode error means malformed JSON rather than a
// well-formed value of the wrong type.
func isSyntax(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// checkEntry validates one tensor record against the data section
// [dataStart, dataStart+dataLen) of a file of fileSize bytes.
func checkEntry(name string, e rawEntry, dataStart, dataLen, fileSize int64) (Info, error) {
	if name == "" {
		return Info{}, errors.New("header has a tensor with an empty name")
	}
	if e.DType == nil {
		return Info{}, fmt.Errorf("tensor %q has no dtype", name)
	}
	dt, ok := tensor.ParseDType(*e.DType)
	if !ok {
		return Info{}, fmt.Errorf("tensor %q has dtype %q, which Hearth does not read (supported: %s)", name, *e.DType, supportedDTypes())
	}
	if e.Shape == nil {
		return Info{}, fmt.Errorf("tensor %q has no shape", name)
	}
	if len(e.Offsets) != 2 {
		return Info{}, fmt.Errorf("tensor %q: data_offsets has %d values, want 2", name, len(e.Offsets))
	}
	shape := make([]int, len(e.Shape))
	elems := int64(1)
	for i, d := range e.Shape {
		if d < 0 || int64(int(d)) != d {
			return Info{}, fmt.Errorf("tensor %q: shape %v has an invalid dimension %d", name, e.Shape, d)
		}
		shape[i] = int(d)
		var ok bool
		if elems, ok = mulInt64(elems, d); !ok {
			return Info{}, fmt.Errorf("tensor %q: shape %v is too large", name, e.Shape)
		}
	}
	nbytes, ok := mulInt64(elems, int64(dt.Size()))
	if !ok {
		return Info{}, fmt.Errorf("tensor %q: shape %v is too large", name, e.Shape)
	}
	begin, end := e.Offsets[0], e.Offsets[1]
	if begin < 0 || end < begin {
		return Info{}, fmt.Errorf("tensor %q: data_offsets [%d, %d] are not a byte range", name, begin, end)
	}
	if end-begin != nbytes {
		return Info{}, fmt.Errorf("tensor %q: %s %v needs %d bytes, data_offsets [%d, %d] hold %d", name, dt, e.Shape, nbytes, begin, end, end-begin)
	}
	if end > dataLen {
		return Info{}, fmt.Errorf("tensor %q ends at byte %d, file has %d (incomplete download?)", name, uint64(dataStart)+uint64(end), fileSize)
	}
	return Info{Name: name, DType: dt, Shape: shape, Offset: dataStart + begin, Length: nbytes}, nil
}

// checkOverlaps refuses two non-empty tensors sharing bytes.
func checkOverlaps(infos []Info) error {
	byOffset := make([]Info, 0, len(infos))
	for _, in := range infos {
		if in.Length > 0 {
			byOffset = append(byOffset, in)
		}
	}
	sort.Slice(byOffset, func(i, j int) bool {
		if byOffset[i].Offset != byOffset[j].Offset {
			return byOffset[i].Offset < byOffset[j].Offset
		}
		return byOffset[i].Name < byOffset[j].Name
	})
	for i := 1; i < len(byOffset); i++ {
		prev, cur := byOffset[i-1], byOffset[i]
		if cur.Offset < prev.Offset+prev.Length {
			return fmt.Errorf("tensors %q and %q overlap in the file", prev.Name, cur.Name)
		}
	}
	return nil
}

// mulInt64 multiplies two non-negative int64s, reporting overflow.
func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > math.MaxInt64/b {
		return 0, false
	}
	return a * b, true
}
