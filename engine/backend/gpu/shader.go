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
//	                               (needs cols % 32 == 0; xs = Σ x), and
//	                               its parts (blockFuncs)
//
// Quantized data binds as vec4 words; an element is
// float(q)*scale + bias as tensor.Weight.DecodeRow defines it.
type accessor struct {
	Name  string
	Bind  int // first binding
	Kind  kind
	Cols  int
	Block bool // emit p_dot
	// Prescaled: the x given to p_dot is already multiplied by xScale
	// (the matrix-vector kernel scales x once when staging it).
	Prescaled bool
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
			s.WriteString(a.blockFuncs())
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
		s.WriteString(a.blockFuncs())
	}
	return s.String()
}

const dotArgs = "x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>, x4: vec4<f32>, x5: vec4<f32>, x6: vec4<f32>, x7: vec4<f32>, xs: f32"

// rawVec4 is the vec4<u32> words one 32-element block of the weight takes
// (2, 3, 5 and 6 bits: words, not vec4s, rounded up).
func (a accessor) rawVec4() int {
	if a.Kind.quantized() {
		return (a.Kind.bits + 3) / 4
	}
	if a.Kind.dt == tensor.F32 {
		return 8
	}
	return 4
}

// rawType is the WGSL type p_raw returns: a block's data words as loaded.
func (a accessor) rawType() string {
	if k := a.Kind; k.quantized() && k.bits%4 != 0 {
		return fmt.Sprintf("array<u32, %d>", k.bits)
	}
	return fmt.Sprintf("array<vec4<u32>, %d>", a.rawVec4())
}

// sRawType is the WGSL type p_sraw returns: a block's scale and bias
// words as loaded (a dense weight has none: a placeholder u32). A block of
// a group-16 weight has two groups' words.
func (a accessor) sRawType() string {
	k := a.Kind
	switch {
	case !k.quantized():
		return "u32"
	case k.group == 16 && k.sdt == tensor.F32:
		return "vec4<u32>"
	case k.group == 16 || k.sdt == tensor.F32:
		return "vec2<u32>"
	}
	return "u32"
}

// blockFuncs writes, for a weight read one 32-element block at a time:
//
//	p_raw(row, blk)                 the block's data words, as loaded
//	p_sraw(row, blk)                its scale and bias words, as loaded
//	p_dotr(raw, sraw, x0..x7, xs)   Σ w·x over the block from loaded words
//	p_dot(row, blk, x0..x7, xs)     the three together
//
// The loads are apart from the arithmetic so a kernel can issue them
// where it likes (issuing them before the matrix-vector kernel stages x
// measured slower on the H200: docs/design/gpu.md, Performance).
func (a accessor) blockFuncs() string {
	var s strings.Builder
	p, k := a.Name, a.Kind
	fmt.Fprintf(&s, "fn %s_raw(row: u32, blk: u32) -> %s {\n", p, a.rawType())
	var parts []string
	switch {
	case strings.HasPrefix(a.rawType(), "array<u32"):
		fmt.Fprintf(&s, "\tlet i = row * %du + blk * %du;\n", a.Cols*k.bits/32, k.bits)
		for w := 0; w < k.bits; w++ {
			parts = append(parts, fmt.Sprintf("%s_w(i + %du)", p, w))
		}
	default:
		nv := a.rawVec4()
		fmt.Fprintf(&s, "\tlet i = row * %du + blk * %du;\n", a.Cols/32*nv, nv)
		for v := 0; v < nv; v++ {
			parts = append(parts, fmt.Sprintf("%s_d[i + %du]", p, v))
		}
	}
	fmt.Fprintf(&s, "\treturn %s(%s);\n}\n", a.rawType(), strings.Join(parts, ", "))
	fmt.Fprintf(&s, "fn %s_sraw(row: u32, blk: u32) -> %s {\n", p, a.sRawType())
	switch {
	case !k.quantized():
		s.WriteString("\treturn 0u;\n}\n")
	case k.group == 16 && k.sdt == tensor.F32:
		fmt.Fprintf(&s, "\tlet g = row * %du + blk * 2u;\n\treturn vec4<u32>(%s_s[2u * g], %s_s[2u * g + 1u], %s_s[2u * g + 2u], %s_s[2u * g + 3u]);\n}\n", a.Cols/16, p, p, p, p)
	case k.group == 16:
		fmt.Fprintf(&s, "\tlet g = row * %du + blk * 2u;\n\treturn vec2<u32>(%s_s[g], %s_s[g + 1u]);\n}\n", a.Cols/16, p, p)
	case k.sdt == tensor.F32:
		fmt.Fprintf(&s, "\tlet g = row * %du + blk * 32u / %du;\n\treturn vec2<u32>(%s_s[2u * g], %s_s[2u * g + 1u]);\n}\n", a.Cols/k.group, k.group, p, p)
	default:
		fmt.Fprintf(&s, "\tlet g = row * %du + blk * 32u / %du;\n\treturn %s_s[g];\n}\n", a.Cols/k.group, k.group, p)
	}
	fmt.Fprintf(&s, "fn %s_dotr(r: %s, sr: %s, %s) -> f32 {\n", p, a.rawType(), a.sRawType(), dotArgs)
	if k.quantized() {
		s.WriteString(a.quantDot())
	} else {
		s.WriteString(a.denseDot())
	}
	fmt.Fprintf(&s, "fn %s_dot(row: u32, blk: u32, %s) -> f32 {\n\treturn %s_dotr(%s_raw(row, blk), %s_sraw(row, blk), x0, x1, x2, x3, x4, x5, x6, x7, xs);\n}\n", p, dotArgs, p, p, p)
	return s.String()
}

// denseDot is the body of p_dotr for a dense weight.
func (a accessor) denseDot() string {
	var s strings.Builder
	switch a.Kind.dt {
	case tensor.F32: // 8 vec4 per block
		s.WriteString("\tvar d = dot(bitcast<vec4<f32>>(r[0]), x0);\n")
		for j := 1; j < 8; j++ {
			fmt.Fprintf(&s, "\td += dot(bitcast<vec4<f32>>(r[%d]), x%d);\n", j, j)
		}
	default: // 4 vec4 words per block, 2 halves per word
		s.WriteString("\tvar d = 0.0;\n")
		for j := 0; j < 4; j++ {
			fmt.Fprintf(&s, "\t{ let w = r[%d];\n", j)
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

// quantDot is the body of p_dotr for a quantized weight. A level is made a
// float exactly by or-ing it into the mantissa of 2²³ and subtracting 2²³
// (cheaper than an integer conversion). For 2, 4 and 8 bits the level is
// masked in place rather than shifted down — q·2^p comes out, and x is
// scaled by 2^-p instead (exact: powers of two) — so a word costs one shift
// and one and-or per element. The block is scaled once:
// Σ(q·s + b)·x = s·Σq·x + b·Σx; a group-16 weight's block twice, each
// half with its own sums (quantDot16).
func (a accessor) quantDot() string {
	var s strings.Builder
	bits := a.Kind.bits
	g16 := a.Kind.group == 16
	s.WriteString("\tlet M = vec4<u32>(0x4B000000u);\n\tlet F = vec4<f32>(8388608.0);\n")
	switch {
	case g16:
		s.WriteString(a.quantDot16Scales())
	case a.Kind.sdt == tensor.BF16:
		s.WriteString("\tlet sb = vec2<f32>(bitcast<f32>(sr << 16u), bitcast<f32>(sr & 0xffff0000u));\n")
	case a.Kind.sdt == tensor.F16:
		s.WriteString("\tlet sb = unpack2x16float(sr);\n")
	default:
		s.WriteString("\tlet sb = bitcast<vec2<f32>>(sr);\n")
	}
	mask := 1<<bits - 1
	// four independent sums (one fused multiply-add per element), added
	// once at the end; for group 16, four for each half (d, then d1)
	s.WriteString("\tvar d = vec4<f32>(0.0);\n")
	acc := func(xi int) string {
		if g16 && xi >= 4 {
			return "d1"
		}
		return "d"
	}
	if g16 {
		s.WriteString("\tvar d1 = vec4<f32>(0.0);\n")
	}
	words := bits // words per 32-element block
	if strings.HasPrefix(a.rawType(), "array<u32") {
		for w := 0; w < words; w++ {
			fmt.Fprintf(&s, "\tlet w%d = r[%d];\n", w, w)
		}
	} else {
		for w := 0; w < words; w++ {
			fmt.Fprintf(&s, "\tlet w%d = r[%d].%c;\n", w, w/4, "xyzw"[w%4])
		}
	}
	switch bits {
	case 2, 4, 8:
		for w := 0; w < words; w++ {
			fmt.Fprintf(&s, "\tlet h%d = w%d >> 12u;\n", w, w)
		}
		per := 32 / bits
		for xi := 0; xi < 8; xi++ {
			var src, msk [4]string
			for c := 0; c < 4; c++ {
				e := xi*4 + c
				w, pos := e/per, (e%per)*bits
				word := fmt.Sprintf("w%d", w)
				if pos+bits > 23 {
					word, pos = fmt.Sprintf("h%d", w), pos-12
				}
				src[c], msk[c] = word, fmt.Sprintf("%du", mask<<pos)
			}
			xv := fmt.Sprintf("x%d", xi)
			if !a.Prescaled {
				xv = fmt.Sprintf("x%d * %s", xi, a.Kind.xScaleVec(xi))
			}
			fmt.Fprintf(&s, "\t%[4]s = fma(bitcast<vec4<f32>>((vec4<u32>(%[1]s) & vec4<u32>(%[2]s)) | M) - F, %[3]s, %[4]s);\n",
				strings.Join(src[:], ", "), strings.Join(msk[:], ", "), xv, acc(xi))
		}
	default: // 3, 5, 6 bits: a little-endian bit stream of `bits` words
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
			fmt.Fprintf(&s, "\t%[6]s = fma(bitcast<vec4<f32>>(vec4<u32>(%[1]s, %[2]s, %[3]s, %[4]s) | M) - F, x%[5]d, %[6]s);\n", elem(e), elem(e+1), elem(e+2), elem(e+3), xi, acc(xi))
		}
	}
	if g16 {
		s.WriteString(a.quantDot16Sums())
		s.WriteString("\treturn (((d.x + d.y) + (d.z + d.w)) * sb.x + xs0 * sb.y) + (((d1.x + d1.y) + (d1.z + d1.w)) * sb1.x + xs1 * sb1.y);\n}\n")
		return s.String()
	}
	s.WriteString("\treturn ((d.x + d.y) + (d.z + d.w)) * sb.x + xs * sb.y;\n}\n")
	return s.String()
}

// quantDot16Scales decodes a group-16 block's two scale-and-bias pairs
// (sb for elements 0-15, sb1 for 16-31) from p_sraw's words.
func (a accessor) quantDot16Scales() string {
	switch a.Kind.sdt {
	case tensor.BF16:
		return "\tlet sb = vec2<f32>(bitcast<f32>(sr.x << 16u), bitcast<f32>(sr.x & 0xffff0000u));\n" +
			"\tlet sb1 = vec2<f32>(bitcast<f32>(sr.y << 16u), bitcast<f32>(sr.y & 0xffff0000u));\n"
	case tensor.F16:
		return "\tlet sb = unpack2x16float(sr.x);\n\tlet sb1 = unpack2x16float(sr.y);\n"
	}
	return "\tlet sb = bitcast<vec2<f32>>(sr.xy);\n\tlet sb1 = bitcast<vec2<f32>>(sr.zw);\n"
}

// quantDot16Sums writes the sums of x over a group-16 block's halves (xs0,
// xs1; xs, the whole block's, is not split). A prescaled x is first
// multiplied back by 1/xScale (powers of two: exact).
func (a accessor) quantDot16Sums() string {
	var s strings.Builder
	for h := range 2 {
		var terms []string
		for xi := 4 * h; xi < 4*h+4; xi++ {
			t := fmt.Sprintf("x%d", xi)
			if bits := a.Kind.bits; a.Prescaled && (bits == 2 || bits == 4 || bits == 8) {
				t = fmt.Sprintf("x%d * %s", xi, a.Kind.xUnscaleVec(xi))
			}
			terms = append(terms, t)
		}
		fmt.Fprintf(&s, "\tlet xs%d = dot((%s) + (%s), vec4<f32>(1.0));\n", h, terms[0]+" + "+terms[1], terms[2]+" + "+terms[3])
	}
	return s.String()
}

// xScale is the factor quantDot applies to element e (0..31) of a block's
// x: 2^-p where the level of e sits p bits up in the masked word (2, 4 and
// 8 bits; levels that would reach past the mantissa are taken from the
// word shifted down by 12). 1 for every other kind.
func (k kind) xScale(e int) float64 {
	switch k.bits {
	case 2, 4, 8:
		pos := (e % (32 / k.bits)) * k.bits
		if pos+k.bits > 23 {
			pos -= 12
		}
		return math.Ldexp(1, -pos)
	}
	return 1
}

// xScaleVec is the WGSL vec4 of xScale for elements 4j..4j+3.
func (k kind) xScaleVec(j int) string { return k.scaleVec(j, 1) }

// xUnscaleVec is the WGSL vec4 of 1/xScale for elements 4j..4j+3.
func (k kind) xUnscaleVec(j int) string { return k.scaleVec(j, -1) }

// scaleVec is the WGSL vec4 of xScale (sign 1) or its inverse (-1) for
// elements 4j..4j+3.
func (k kind) scaleVec(j, sign int) string {
	var c [4]string
	for i := range c {
		c[i] = strconv.FormatFloat(math.Pow(k.xScale(4*j+i), float64(sign)), 'g', -1, 64)
		if !strings.ContainsAny(c[i], ".e") {
			c[i] += ".0"
		}
	}
	return "vec4<f32>(" + strings.Join(c[:], ", ") + ")"
}
