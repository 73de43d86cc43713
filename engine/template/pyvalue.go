package template

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// pyStr prints v as Jinja2 prints an expression: Python's str(), with an
// undefined value printing as "".
func pyStr(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return ""
	case v.IsString():
		return v.AsString()
	}
	return pyRepr(v)
}

// pyRepr writes v as Python's repr() does.
func pyRepr(v jinja.Value) string {
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

func writeRepr(b *strings.Builder, v jinja.Value) {
	switch {
	case v.IsUndefined():
		b.WriteString("Undefined")
	case v.IsNone():
		b.WriteString("None")
	case v.IsBool():
		if v.AsBool() {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloatRepr(v.AsFloat()))
	case v.IsString():
		b.WriteString(pyReprString(v.AsString()))
	case v.IsList():
		b.WriteByte('[')
		for i, item := range v.AsList().Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, item)
		}
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		b.WriteByte('{')
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyReprString(k))
			b.WriteString(": ")
			writeRepr(b, d.Data[k])
		}
		b.WriteByte('}')
	default:
		b.WriteString(v.String())
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

// pyJSON encodes v as Python's json.dumps does with opt.
func pyJSON(v jinja.Value, opt jsonOptions) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, opt, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, v jinja.Value, opt jsonOptions, level int) error {
	switch {
	case v.IsUndefined():
		return fmt.Errorf("Object of type Undefined is not JSON serializable")
	case v.IsCallable():
		return fmt.Errorf("Object of type function is not JSON serializable")
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		f := v.AsFloat()
		switch {
		case math.IsNaN(f):
			b.WriteString("NaN")
		case math.IsInf(f, 1):
			b.WriteString("Infinity")
		case math.IsInf(f, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(pyFloatRepr(f))
		}
	case v.IsString():
		writeJSONString(b, v.AsString(), opt.ensureASCII)
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		sep := opt.open(b, level+1)
		for i, item := range items {
			if i > 0 {
				b.WriteString(sep)
			}
			if err := writeJSON(b, item, opt, level+1); err != nil {
				return err
			}
		}
		opt.close(b, level)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := d.Keys
		if opt.sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys) // byte order of UTF-8 is code point order
		}
		b.WriteByte('{')
		sep := opt.open(b, level+1)
		for i, k := range keys {
			if i > 0 {
				b.WriteString(sep)
			}
			writeJSONString(b, k, opt.ensureASCII)
			b.WriteString(opt.keySep)
			if err := writeJSON(b, d.Data[k], opt, level+1); err != nil {
				return err
			}
		}
		opt.close(b, level)
		b.WriteByte('}')
	}
	return nil
}

// open starts the items of a container at level and returns the separator
// between items.
func (o jsonOptions) open(b *strings.Builder, level int) string {
	if o.indent == nil {
		return o.itemSep
	}
	nl := "\n" + strings.Repeat(*o.indent, level)
	b.WriteString(nl)
	return o.itemSep + nl
}

func (o jsonOptions) close(b *strings.Builder, level int) {
	if o.indent != nil {
		b.WriteString("\n" + strings.Repeat(*o.indent, level))
	}
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
