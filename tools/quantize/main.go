// Command quantize converts a dense safetensors checkpoint directory into an
// MLX affine-quantized one with Hearth's own quantizer (engine/weights,
// byte-exact with MLX's scheme), as mlx_lm.convert -q does: every 2-D
// ".weight" whose last dimension is a multiple of the group size is
// quantized; norms and biases keep their dtype; config.json gains
// "quantization". Other files in the directory are copied.
//
//	go run ./tools/quantize --bits 8 --group 64 SRC DST
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"hearth/engine/tensor"
	"hearth/engine/weights"
)

func main() {
	bits := flag.Int("bits", 8, "bits per weight (2, 3, 4, 5, 6 or 8)")
	group := flag.Int("group", 64, "group size (32, 64 or 128)")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: quantize [--bits B] [--group G] SRC DST")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), tensor.Quant{Bits: *bits, GroupSize: *group}); err != nil {
		fmt.Fprintln(os.Stderr, "quantize:", err)
		os.Exit(1)
	}
}

func run(src, dst string, q tensor.Quant) error {
	set, err := weights.Open(src)
	if err != nil {
		return err
	}
	defer set.Close()
	var out []tensor.Weight
	n := 0
	for _, name := range set.Names() {
		info, _ := set.Info(name)
		raw, _ := set.Bytes(name)
		w := tensor.Weight{Name: name, DType: info.DType, Shape: info.Shape, Data: raw}
		prefix, isWeight := strings.CutSuffix(name, ".weight")
		if isWeight && len(info.Shape) == 2 && info.Shape[1]%q.GroupSize == 0 && info.DType != tensor.U32 {
			rows, cols := info.Shape[0], info.Shape[1]
			vals := make([]float32, rows*cols)
			tensor.Float32(info.DType, raw, 0, vals)
			scaleDT := info.DType
			if scaleDT == tensor.F32 {
				scaleDT = tensor.BF16
			}
			qw, err := weights.Quantize(vals, rows, cols, q, scaleDT)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			qw.Name = prefix
			w = qw
			n++
		}
		out = append(out, w)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if err := weights.Write(filepath.Join(dst, "model.safetensors"), out, map[string]string{"format": "mlx"}); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasSuffix(name, ".safetensors") || name == "model.safetensors.index.json" {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if name == "config.json" {
			if raw, err = addQuantization(raw, q); err != nil {
				return fmt.Errorf("config.json: %w", err)
			}
		}
		if err := os.WriteFile(filepath.Join(dst, name), raw, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("quantized %d tensors to %d bits, group %d: %s\n", n, q.Bits, q.GroupSize, dst)
	return nil
}

// addQuantization adds mlx-lm's "quantization" (and "quantization_config")
// keys, keeping the other keys as they were.
func addQuantization(raw []byte, q tensor.Quant) ([]byte, error) {
	var c map[string]json.RawMessage
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	qc, _ := json.Marshal(map[string]int{"group_size": q.GroupSize, "bits": q.Bits})
	c["quantization"], c["quantization_config"] = qc, qc
	return json.MarshalIndent(c, "", "  ")
}
