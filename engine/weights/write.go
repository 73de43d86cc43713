// Writing safetensors checkpoints, for tests, the quantizer CLI and synthetic
// benchmarks.

package weights

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"hearth/engine/tensor"
)

// record is one tensor to write.
type record struct {
	name  string
	dtype tensor.DType
	shape []int
	data  []byte
}

// Write writes ws as the safetensors file path. A dense weight is written
// under its Name; a quantized one as Name+".weight" (U32, shape
// [..., in*bits/32]), Name+".scales" and Name+".biases" ([..., in/group]).
// Tensors are laid out sorted by name, and the header is padded with spaces
// to a multiple of 8 bytes, as the Python safetensors library does. The file
// appears at path only once it is complete.
func Write(path string, ws []tensor.Weight, metadata map[string]string) error {
	recs, err := records(ws)
	if err != nil {
		return err
	}
	hdr, err := encodeHeader(recs, metadata)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	bw.Write(lenBuf[:])
	bw.Write(hdr)
	for _, r := range recs {
		bw.Write(r.data)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// records expands ws into the tensors to write, sorted by name, checking
// that every buffer fits its shape and no name repeats.
func records(ws []tensor.Weight) ([]record, error) {
	var recs []record
	for _, w := range ws {
		if w.Name == "" {
			return nil, fmt.Errorf("write: a weight has no name")
		}
		if w.Quant == nil {
			if err := checkBuffer(w.Name, w.DType, w.Shape, len(w.Data)); err != nil {
				return nil, err
			}
			recs = append(recs, record{w.Name, w.DType, w.Shape, w.Data})
			continue
		}
		n := len(w.Shape)
		q := *w.Quant
		if err := checkMLXQuant(q); err != nil {
			return nil, fmt.Errorf("write %q: %w", w.Name, err)
		}
		if n < 2 || w.Shape[n-1]%q.GroupSize != 0 {
			return nil, fmt.Errorf("write %q: shape %v does not fit group size %d", w.Name, w.Shape, q.GroupSize)
		}
		if !isFloat(w.ScaleDType) {
			return nil, fmt.Errorf("write %q: scale dtype %s is not F32, F16 or BF16", w.Name, w.ScaleDType)
		}
		packed := append([]int(nil), w.Shape...)
		packed[n-1] = w.Shape[n-1] * q.Bits / 32
		groups := append([]int(nil), w.Shape...)
		groups[n-1] = w.Shape[n-1] / q.GroupSize
		for _, r := range []record{
			{w.Name + ".weight", tensor.U32, packed, w.Data},
			{w.Name + ".scales", w.ScaleDType, groups, w.Scales},
			{w.Name + ".biases", w.ScaleDType, groups, w.Biases},
		} {
			if err := checkBuffer(r.name, r.dtype, r.shape, len(r.data)); err != nil {
				return nil, err
			}
			recs = append(recs, r)
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].name < recs[j].name })
	for i := 1; i < len(recs); i++ {
		if recs[i].name == recs[i-1].name {
			return nil, fmt.Errorf("write: tensor %q appears twice", recs[i].name)
		}
	}
	return recs, nil
}

// checkBuffer checks that n bytes hold a tensor of dtype dt and shape.
func checkBuffer(name string, dt tensor.DType, shape []int, n int) error {
	if name == "__metadata__" {
		return fmt.Errorf("write: %q is reserved", name)
	}
	if dt.Size() == 0 {
		return fmt.Errorf("write %q: unknown dtype %v", name, dt)
	}
	elems, ok := elementsChecked(shape)
	if !ok {
		return fmt.Errorf("write %q: invalid shape %v", name, shape)
	}
	if want, ok := mulInt64(elems, int64(dt.Size())); !ok || want != int64(n) {
		return fmt.Errorf("write %q: %s %v needs %d bytes, the buffer has %d", name, dt, shape, elems*int64(dt.Size()), n)
	}
	return nil
}

// headerEntry is one tensor's header record, fields in the order the Python
// safetensors library writes them.
type headerEntry struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// encodeHeader builds the JSON header (metadata first, tensors in recs
// order, compact) padded with spaces to a multiple of 8 bytes.
func encodeHeader(recs []record, metadata map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	put := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		return nil
	}
	buf.WriteByte('{')
	first := true
	if len(metadata) > 0 {
		buf.WriteString(`"__metadata__":`)
		if err := put(metadata); err != nil {
			return nil, err
		}
		first = false
	}
	var off int64
	for _, r := range recs {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if err := put(r.name); err != nil {
			return nil, err
		}
		shape := r.shape
		if shape == nil {
			shape = []int{}
		}
		end := off + int64(len(r.data))
		buf.WriteByte(':')
		if err := put(headerEntry{r.dtype.String(), shape, [2]int64{off, end}}); err != nil {
			return nil, err
		}
		off = end
	}
	buf.WriteByte('}')
	for buf.Len()%8 != 0 {
		buf.WriteByte(' ')
	}
	return buf.Bytes(), nil
}
