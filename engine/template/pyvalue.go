package template

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"hearth/engine/template/jinja"
)

// pyStr prints v as Jinja2 prints an expression: Python's str(), with an
// undefined value printing as "". The text of a printed container is
// charged to b.
func pyStr(b *jinja.Budget, v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return ""
	case v.IsString():
		return v.AsString()
	}
	return pyRepr(b, v)
}

// pyRepr writes v as Python's repr() does, charging b for the text; it
// stops early (b.Err says why) when b runs out.
func pyRepr(b *jinja.Budget, v jinja.Value) string { return repr(b, v, -1) }

// shortRepr is repr for an error message: at most 200 bytes.
func shortRepr(v jinja.Value) string { return repr(nil, v, 200) }

// repr is Python's repr() of v, charged to b and cut at max bytes (with
// "...") when max >= 0.
func repr(b *jinja.Budget, v jinja.Value, max int) string {
	w := reprWriter{jinja.NewBuilder(b, max)}
	w.value(v, 1)
	if max < 0 {
		return w.String("")
	}
	return w.String("...")
}

// reprWriter writes a Python repr through a jinja.Builder (its budget
// and size cap).
type reprWriter struct{ jinja.Builder }

func (w *reprWriter) value(v jinja.Value, depth int) {
	if w.Cut() || w.Budget().Nest(depth) != nil {
		w.Stop()
		return
	}
	switch {
	case v.IsUndefined():
		w.Write("Undefined")
	case v.IsNone():
		w.Write("None")
	case v.IsBool():
		if v.AsBool() {
			w.Write("True")
		} else {
			w.Write("False")
		}
	case v.IsInt():
		w.Write(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		w.Write(pyFloatRepr(v.AsFloat()))
	case v.IsString():
		// The quoted text is at most ten bytes per byte of s.
		if w.Budget().Alloc(int64(len(v.AsString()))) != nil {
			w.Stop()
			return
		}
		w.Write(pyReprString(v.AsString()))
	case v.IsList():
		w.Write("[")
		for i, item := range v.AsList().Items {
			if i > 0 && !w.Write(", ") {
				return
			}
			if w.value(item, depth+1); w.Cut() {
				return
			}
		}
		w.Write("]")
	case v.IsDict():
		d := v.AsDict()
		w.Write("{")
		for i, k := range d.Keys {
			if i > 0 && !w.Write(", ") {
				return
			}
			if w.Budget().Alloc(int64(len(k))) != nil || !w.Write(pyReprString(k)) || !w.Write(": ") {
				w.Stop()
				return
			}
			if w.value(d.Data[k], depth+1); w.Cut() {
				return
			}
		}
		w.Write("}")
	default:
		w.Write(v.String())
	}
}

// jsonOptions are the json.dumps arguments transformers' tojson passes on.
type jsonOptions struct {
	ensureASCII bool
	indent      *string // nil: no newlines
	itemSep     string
	keySep      string
	sortKeys    bool
}

// pyJSON encodes v as Python's json.dumps does with opt, charging b for
// the text as it is written.
func pyJSON(b *jinja.Budget, v jinja.Value, opt jsonOptions) (string, error) {
	w := jsonWriter{b: b, opt: opt}
	if err := w.value(v, 0); err != nil {
		return "", err
	}
	return w.sb.String(), nil
}

// jsonWriter writes JSON under a budget.
type jsonWriter struct {
	b   *jinja.Budget
	sb  strings.Builder
	opt jsonOptions
}

// write appends s once the budget allows it.
func (w *jsonWriter) write(s string) error {
	if err := w.b.Alloc(int64(len(s))); err != nil {
		return err
	}
	w.sb.WriteString(s)
	return nil
}

func (w *jsonWriter) value(v jinja.Value, level int) error {
	if err := w.b.Nest(level + 1); err != nil {
		return err
	}
	opt := w.opt
	switch {
	case v.IsUndefined():
		return fmt.Errorf("Object of type Undefined is not JSON serializable")
	case v.IsCallable():
		return fmt.Errorf("Object of type function is not JSON serializable")
	case v.IsNone():
		return w.write("null")
	case v.IsBool():
		return w.write(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		return w.write(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		f := v.AsFloat()
		switch {
		case math.IsNaN(f):
			return w.write("NaN")
		case math.IsInf(f, 1):
			return w.write("Infinity")
		case math.IsInf(f, -1):
			return w.write("-Infinity")
		}
		return w.write(pyFloatRepr(f))
	case v.IsString():
		return w.string(v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			return w.write("[]")
		}
		if err := w.write("["); err != nil {
			return err
		}
		sep, err := w.open(level + 1)
		if err != nil {
			return err
		}
		for i, item := range items {
			if i > 0 {
				if err := w.write(sep); err != nil {
					return err
				}
			}
			if err := w.value(item, level+1); err != nil {
				return err
			}
		}
		if err := w.close(level); err != nil {
			return err
		}
		return w.write("]")
	case v.IsDict():
		d := v.AsDict()
		if d.Len() == 0 {
			return w.write("{}")
		}
		keys := d.Keys
		if opt.sortKeys {
			if err := w.b.AllocItems(len(keys)); err != nil {
				return err
			}
			keys = append([]string(nil), keys...)
			sort.Strings(keys) // byte order of UTF-8 is code point order
		}
		if err := w.write("{"); err != nil {
			return err
		}
		sep, err := w.open(level + 1)
		if err != nil {
			return err
		}
		for i, k := range keys {
			if i > 0 {
				if err := w.write(sep); err != nil {
					return err
				}
			}
			if err := w.string(k); err != nil {
				return err
			}
			if err := w.write(opt.keySep); err != nil {
				return err
			}
			if err := w.value(d.Data[k], level+1); err != nil {
				return err
			}
		}
		if err := w.close(level); err != nil {
			return err
		}
		return w.write("}")
	}
	return nil
}

// open starts the items of a container at level and returns the separator
// between items.
func (w *jsonWriter) open(level int) (string, error) {
	o := w.opt
	if o.indent == nil {
		return o.itemSep, nil
	}
	if err := w.b.Alloc(jinja.MulSat(int64(len(*o.indent)), int64(level)) + 1); err != nil {
		return "", err
	}
	nl := "\n" + strings.Repeat(*o.indent, level)
	w.sb.WriteString(nl)
	return o.itemSep + nl, nil
}

func (w *jsonWriter) close(level int) error {
	o := w.opt
	if o.indent == nil {
		return nil
	}
	return w.write("\n" + strings.Repeat(*o.indent, level))
}

// string writes s quoted as json.dumps does, charging its exact length.
func (w *jsonWriter) string(s string) error {
	if err := w.b.Alloc(jsonStringLen(s, w.opt.ensureASCII)); err != nil {
		return err
	}
	writeJSONString(&w.sb, s, w.opt.ensureASCII)
	return nil
}

// jsonStringLen is the length writeJSONString writes for s.
func jsonStringLen(s string, ensureASCII bool) int64 {
	n := int64(2)
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
			n += 2
		case r < 0x20:
			n += 6
		case !ensureASCII || r < 0x7f:
			n += int64(utf8.RuneLen(r)) // an invalid byte becomes U+FFFD
		case r <= 0xffff:
			n += 6
		default:
			n += 12
		}
	}
	return n
}

// writeJSONString quotes s as json.dumps does: \" \\ \b \f \n \r \t, other
// control characters as \u00XX, and, with ensureASCII, everything beyond
// ASCII as \uXXXX (surrogate pairs above U+FFFF).
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(b, `\u%04x`, r)
			case !ensureASCII || r < 0x7f:
				b.WriteRune(r)
			case r <= 0xffff:
				fmt.Fprintf(b, `\u%04x`, r)
			default:
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			}
		}
	}
	b.WriteByte('"')
}
