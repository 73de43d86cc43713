package gpu

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/template"

	"github.com/cogentcore/webgpu/wgpu"

	"hearth/engine/tensor"
)

//go:embed shaders/*.wgsl
var shaderFS embed.FS

var shaderTmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"seq": func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = i
		}
		return s
	},
	"mul": func(a, b int) int { return a * b },
	"add": func(a, b int) int { return a + b },
	"div": func(a, b int) int { return a / b },
}).ParseFS(shaderFS, "shaders/*.wgsl"))

// source renders shader template name with data.
func source(name string, data any) string {
	var buf bytes.Buffer
	if err := shaderTmpl.ExecuteTemplate(&buf, name, data); err != nil {
		panic(fmt.Sprintf("gpu: shader template %s: %v", name, err)) // templates are part of the binary
	}
	return buf.String()
}

// pipeline compiles (once) the compute pipeline for WGSL source src.
func (b *Backend) pipeline(label, src string) (*wgpu.ComputePipeline, error) {
	if p, ok := b.pipes[src]; ok {
		return p, nil
	}
	mod, err := b.dev.CreateShaderModule(&wgpu.ShaderModuleDescriptor{Label: label, WGSLDescriptor: &wgpu.ShaderModuleWGSLDescriptor{Code: src}})
	if err != nil {
		return nil, fmt.Errorf("compile kernel %s: %w", label, err)
	}
	defer mod.Release()
	p, err := b.dev.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{Label: label, Compute: wgpu.ProgrammableStageDescriptor{Module: mod, EntryPoint: "main"}})
	if err != nil {
		return nil, fmt.Errorf("compile kernel %s: %w", label, err)
	}
	b.pipes[src] = p
	return p, nil
}

// accessor is the WGSL that reads one weight (or a float32 tensor seen as a
// weight) named p: bindings p_d (and p_s for scales and biases), and
//
//	p_get(row, col) -> f32         the dequantized element
//	p_dot(row, blk, x0..x7, xs)    Σ w·x over the 32 elements of block blk
//	                               (needs cols % 32 == 0; xs = Σ x)
//
// Quantized data binds as vec4 words; an element is
// float(q)*scale + bias as tensor.Weight.DecodeRow defines it.
type accessor struct {
	Name  string
	Bind  int // first binding
	Kind  kind
	Cols  int
	Block bool // emit p_dot
}

// bindings is how many bindings the accessor takes.
func (a accessor) bindings() int {
	if a.Kind.quantized() {
		return 2
	}
	return 1
}

func (a accessor) String() string {
	var s strings.Builder
	p := a.Name
	fmt.Fprintf(&s, "@group(0) @binding(%d) var<storage, read> %s_d: array<vec4<u32>>;\n", a.Bind, p)
	fmt.Fprintf(&s, "fn %s_w(i: u32) -> u32 { return %s_d[i >> 2u][i & 3u]; }\n", p, p)
	k := a.Kind
	if !k.quantized() {
		fmt.Fprintf(&s, "fn %s_get(row: u32, col: u32) -> f32 {\n\tlet i = row * %du + col;\n", p, a.Cols)
		switch k.dt {
		case tensor.F32:
			fmt.Fprintf(&s, "\treturn bitcast<f32>(%s_w(i));\n}\n", p)
		case tensor.F16:
			fmt.Fprintf(&s, "\treturn unpack2x16float(%s_w(i >> 1u))[i & 1u];\n}\n", p)
		case tensor.BF16:
			fmt.Fprintf(&s, "\tlet w = %s_w(i >> 1u);\n\treturn bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u));\n}\n", p)
		}
		if a.Block {
			s.WriteString(a.denseDot())
		}
		return s.String()
	}
	fmt.Fprintf(&s, "@group(0) @binding(%d) var<storage, read> %s_s: array<u32>;\n", a.Bind+1, p)
	rw := a.Cols * k.bits / 32
	groups := a.Cols / k.group
	fmt.Fprintf(&s, "fn %s_sb(row: u32, col: u32) -> vec2<f32> {\n\tlet g = row * %du + col / %du;\n", p, groups, k.group)
	switch k.sdt {
	case tensor.BF16:
		fmt.Fprintf(&s, "\tlet w = %s_s[g];\n\treturn vec2<f32>(bitcast<f32>(w << 16u), bitcast<f32>(w & 0xffff0000u));\n}\n", p)
	case tensor.F16:
		fmt.Fprintf(&s, "\treturn unpack2x16float(%s_s[g]);\n}\n", p)
	default:
		fmt.Fprintf(&s, "\treturn vec2<f32>(bitcast<f32>(%s_s[2u * g]), bitcast<f32>(%s_s[2u * g + 1u]));\n}\n", p, p)
	}
	fmt.Fprintf(&s, "fn %s_q(row: u32, col: u32) -> u32 {\n\tlet bit = col * %du;\n\tlet i = row * %du + (bit >> 5u);\n\tlet sh = bit & 31u;\n\tvar v = %s_w(i) >> sh;\n", p, k.bits, rw, p)
	if 32%k.bits != 0 {
		fmt.Fprintf(&s, "\tif (sh + %du > 32u) { v = v | (%s_w(i + 1u) << (32u - sh)); }\n", k.bits, p)
	}
	fmt.Fprintf(&s, "\treturn v & %du;\n}\n", 1<<k.bits-1)
	fmt.Fprintf(&s, "fn %s_get(row: u32, col: u32) -> f32 {\n\tlet sb = %s_sb(row, col);\n\treturn f32(%s_q(row, col)) * sb.x + sb.y;\n}\n", p, p, p)
	if a.Block {
		s.WriteString(a.quantDot())
	}
	return s.String()
}

const dotArgs = "x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>, x4: vec4<f32>, x5: vec4<f32>, x6: vec4<f32>, x7: vec4<f32>, xs: f32"

// denseDot sums one 32-element block of a dense row with vec4 loads.
func (a accessor) denseDot() string {
	var s strings.Builder
	p := a.Name
	fmt.Fprintf(&s, "fn %s_dot(row: u32, blk: u32, %s) -> f32 {\n", p, dotArgs)
	switch a.Kind.dt {
	case tensor.F32: // 8 vec4 per block
		fmt.Fprintf(&s, "\tlet i = row * %du + blk * 8u;\n", a.Cols/4)
		fmt.Fprintf(&s, "\tvar d = dot(bitcast<vec4<f32>>(%s_d[i]), x0);\n", p)
		for j := 1; j < 8; j++ {
			fmt.Fprintf(&s, "\td += dot(bitcast<vec4<f32>>(%s_d[i + %du]), x%d);\n", p, j, j)
		}
	default: // 4 vec4 words per block, 2 halves per word
		fmt.Fprintf(&s, "\tlet i = row * %du + blk * 4u;\n\tvar d = 0.0;\n", a.Cols/8)
		for j := 0; j < 4; j++ {
			fmt.Fprintf(&s, "\t{ let w = %s_d[i + %du];\n", p, j)
			if a.Kind.dt == tensor.F16 {
				fmt.Fprintf(&s, "\t  d += dot(vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)), x%d);\n", 2*j)
				fmt.Fprintf(&s, "\t  d += dot(vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w)), x%d); }\n", 2*j+1)
			} else {
				fmt.Fprintf(&s, "\t  d += dot(bitcast<vec4<f32>>(vec4<u32>(w.x << 16u, w.x & 0xffff0000u, w.y << 16u, w.y & 0xffff0000u)), x%d);\n", 2*j)
				fmt.Fprintf(&s, "\t  d += dot(bitcast<vec4<f32>>(vec4<u32>(w.z << 16u, w.z & 0xffff0000u, w.w << 16u, w.w & 0xffff0000u)), x%d); }\n", 2*j+1)
			}
		}
	}
	s.WriteString("\treturn d;\n}\n")
	return s.String()
}

// quantDot sums one 32-element block of a quantized row. A level is made a
// float exactly by or-ing it into the mantissa of 2²³ and subtracting 2²³
// (cheaper than an integer conversion). For 2, 4 and 8 bits the level is
// masked in place rather than shifted down — q·2^p comes out, and x is
// scaled by 2^-p instead (exact: powers of two) — so a word costs one shift
// and one and-or per element. The block is scaled once:
// Σ(q·s + b)·x = s·Σq·x + b·Σx.
func (a accessor) quantDot() string {
	var s strings.Builder
	p, bits := a.Name, a.Kind.bits
	fmt.Fprintf(&s, "fn %s_dot(row: u32, blk: u32, %s) -> f32 {\n", p, dotArgs)
	s.WriteString("\tlet M = vec4<u32>(0x4B000000u);\n\tlet F = vec4<f32>(8388608.0);\n")
	fmt.Fprintf(&s, "\tlet sb = %s_sb(row, blk * 32u);\n", p)
	rw := a.Cols * bits / 32
	mask := 1<<bits - 1
	s.WriteString("\tvar d = 0.0;\n")
	switch bits {
	case 2, 4, 8:
		words := bits // words per 32-element block
		fmt.Fprintf(&s, "\tlet i = row * %du + blk * %du;\n", rw, words)
		if words%4 == 0 {
			for v := 0; v < words/4; v++ {
				fmt.Fprintf(&s, "\tlet v%d = %s_d[(i >> 2u) + %du];\n", v, p, v)
				for c, comp := range []string{"x", "y", "z", "w"} {
					fmt.Fprintf(&s, "\tlet w%d = v%d.%s;\n", 4*v+c, v, comp)
				}
			}
		} else {
			for w := 0; w < words; w++ {
				fmt.Fprintf(&s, "\tlet w%d = %s_w(i + %du);\n", w, p, w)
			}
		}
		for w := 0; w < words; w++ {
			fmt.Fprintf(&s, "\tlet h%d = w%d >> 12u;\n", w, w)
		}
		per := 32 / bits
		for xi := 0; xi < 8; xi++ {
			var src, msk, scl [4]string
			for c := 0; c < 4; c++ {
				e := xi*4 + c
				w, pos := e/per, (e%per)*bits
				word := fmt.Sprintf("w%d", w)
				if pos+bits > 23 {
					word, pos = fmt.Sprintf("h%d", w), pos-12
				}
				src[c], msk[c] = word, fmt.Sprintf("%du", mask<<pos)
				scl[c] = strconv.FormatFloat(math.Ldexp(1, -pos), 'g', -1, 64)
				if !strings.ContainsAny(scl[c], ".e") {
					scl[c] += ".0"
				}
			}
			fmt.Fprintf(&s, "\td += dot(bitcast<vec4<f32>>((vec4<u32>(%s) & vec4<u32>(%s)) | M) - F, x%d * vec4<f32>(%s));\n",
				strings.Join(src[:], ", "), strings.Join(msk[:], ", "), xi, strings.Join(scl[:], ", "))
		}
	default: // 3, 5, 6 bits: a little-endian bit stream of `bits` words
		fmt.Fprintf(&s, "\tlet i = row * %du + blk * %du;\n", rw, bits)
		for w := 0; w < bits; w++ {
			fmt.Fprintf(&s, "\tlet w%d = %s_w(i + %du);\n", w, p, w)
		}
		elem := func(e int) string {
			pos := e * bits
			w, sh := pos/32, pos%32
			if sh+bits <= 32 {
				return fmt.Sprintf("((w%d >> %du) & %du)", w, sh, mask)
			}
			return fmt.Sprintf("(((w%d >> %du) | (w%d << %du)) & %du)", w, sh, w+1, 32-sh, mask)
		}
		for xi := 0; xi < 8; xi++ {
			e := xi * 4
			fmt.Fprintf(&s, "\td += dot(bitcast<vec4<f32>>(vec4<u32>(%s, %s, %s, %s) | M) - F, x%d);\n", elem(e), elem(e+1), elem(e+2), elem(e+3), xi)
		}
	}
	s.WriteString("\treturn d * sb.x + xs * sb.y;\n}\n")
	return s.String()
}
