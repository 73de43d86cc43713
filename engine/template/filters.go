package template

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"hearth/engine/template/jinja"
)

// filters are the Jinja2 filters whose ardanlabs/jinja built-ins differ from
// Python's (or are missing), reimplemented with Jinja2 3.1's semantics and,
// for tojson, transformers'. The rewriter renames a filter found here to
// filterPrefix+name; Render supplies that name as a callable, which the
// library finds after its built-ins. The map is never written after init.
var filters map[string]callable

func init() {
	filters = map[string]callable{
		"tojson": filterToJSON,
		"string": func(b *jinja.Budget, a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return str(pyStr(b, arg(a, 0))), nil
		},
		"trim":     filterTrim,
		"join":     filterJoin,
		"e":        filterEscape,
		"escape":   filterEscape,
		"sort":     filterSort,
		"dictsort": filterDictsort,
		"list":     filterList,
		"map":      filterMap,
		"format":   filterFormat,
		"length":   filterLength,
		"count":    filterLength,
		"upper": func(b *jinja.Budget, a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return caseMap(b, upper, pyStr(b, arg(a, 0)))
		},
		"lower": func(b *jinja.Budget, a []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return caseMap(b, lowerC, pyStr(b, arg(a, 0)))
		},
		"capitalize": filterCapitalize,
		"int":        filterInt,
		"float":      filterFloat,
		"first":      filterFirst,
		"last":       filterLast,
		"indent":     filterIndent,
		"select":     selectFilter(true, false),
		"reject":     selectFilter(false, false),
		"selectattr": selectFilter(true, true),
		"rejectattr": selectFilter(false, true),
		"unique":     filterUnique,
		"min":        minMax(false),
		"max":        minMax(true),
		"round":      filterRound,
	}
}

var (
	upper  = cases.Upper(language.Und)
	lowerC = cases.Lower(language.Und)
	title  = cases.Title(language.Und)
)

func str(s string) jinja.Value { return jinja.NewString(s) }

// caseMap converts s's case with c, charging b first: a character's case
// mapping is at most three times its bytes.
func caseMap(b *jinja.Budget, c cases.Caser, s string) (jinja.Value, error) {
	if err := b.Alloc(3 * int64(len(s))); err != nil {
		return jinja.Undefined(), err
	}
	return str(c.String(s)), nil
}

// filterToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False).
func filterToJSON(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	opt := jsonOptions{itemSep: ", ", keySep: ": "}
	if v, ok := param(args, kwargs, 1, "ensure_ascii"); ok {
		opt.ensureASCII = v.IsTruthy()
	}
	if v, ok := param(args, kwargs, 2, "indent"); ok && !v.IsNone() {
		var ind string
		switch {
		case v.IsString():
			ind = v.AsString()
		case v.IsInt():
			ind = strings.Repeat(" ", int(max(0, min(v.AsInt(), 1<<10))))
		case v.IsBool():
			if v.AsBool() {
				ind = " "
			}
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an int or a string, not %s", shortRepr(v))
		}
		opt.indent, opt.itemSep = &ind, ","
	}
	if v, ok := param(args, kwargs, 3, "separators"); ok && !v.IsNone() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Items[0].IsString() || !v.AsList().Items[1].IsString() {
			return jinja.Undefined(), fmt.Errorf("tojson: separators must be two strings")
		}
		opt.itemSep, opt.keySep = v.AsList().Items[0].AsString(), v.AsList().Items[1].AsString()
	}
	if v, ok := param(args, kwargs, 4, "sort_keys"); ok {
		opt.sortKeys = v.IsTruthy()
	}
	s, err := pyJSON(b, arg(args, 0), opt)
	if err != nil {
		return jinja.Undefined(), err
	}
	return str(s), nil
}

// filterTrim is trim(value, chars=None): str(value).strip(chars).
func filterTrim(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	s := pyStr(b, arg(args, 0))
	if chars, ok := param(args, kwargs, 1, "chars"); ok && !chars.IsNone() && !chars.IsUndefined() {
		return str(strings.Trim(s, pyStr(b, chars))), nil
	}
	return str(strings.TrimFunc(s, pyIsSpace)), nil
}

// filterJoin is join(value, d="", attribute=None).
func filterJoin(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(b, arg(args, 0))
	if err != nil {
		return jinja.Undefined(), err
	}
	sep := ""
	if d, ok := param(args, kwargs, 1, "d"); ok {
		sep = pyStr(b, d)
	}
	attr, hasAttr := param(args, kwargs, 2, "attribute")
	parts := make([]string, len(items))
	size := jinja.MulSat(int64(len(sep)), int64(len(items)))
	for i, item := range items {
		if hasAttr && !attr.IsNone() {
			item = getAttr(b, item, attr)
		}
		parts[i] = pyStr(b, item)
		size += int64(len(parts[i]))
	}
	if err := b.Alloc(size); err != nil {
		return jinja.Undefined(), err
	}
	return str(strings.Join(parts, sep)), nil
}

// filterEscape is markupsafe's escape of str(value).
func filterEscape(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	s := pyStr(b, arg(args, 0))
	if err := b.Alloc(5 * int64(len(s))); err != nil {
		return jinja.Undefined(), err
	}
	r := strings.NewReplacer("&", "&amp;", ">", "&gt;", "<", "&lt;", "'", "&#39;", `"`, "&#34;")
	return str(r.Replace(s)), nil
}

// filterList is list(value).
func filterList(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(b, arg(args, 0))
	return jinja.NewList(items), err
}

// filterMap is map(value, name, *args) applying a filter of this table, or
// map(value, attribute=..., default=...).
func filterMap(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(b, arg(args, 0))
	if err != nil {
		return jinja.Undefined(), err
	}
	if attr, ok := kwargs["attribute"]; ok {
		def, hasDef := kwargs["default"]
		for i, item := range items {
			items[i] = getAttr(b, item, attr)
			if hasDef && items[i].IsUndefined() {
				items[i] = def
			}
		}
		return jinja.NewList(items), nil
	}
	if len(args) < 2 || !args[1].IsString() {
		return jinja.Undefined(), fmt.Errorf("map requires a filter argument")
	}
	f, ok := filters[args[1].AsString()]
	if !ok {
		return jinja.Undefined(), fmt.Errorf("map: filter %q is not supported", args[1].AsString())
	}
	for i, item := range items {
		fa := append([]jinja.Value{item}, args[2:]...)
		if items[i], err = f(b, fa, kwargs); err != nil {
			return jinja.Undefined(), err
		}
	}
	return jinja.NewList(items), nil
}

// filterLength is length(value): Python's len(), 0 for undefined.
func filterLength(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	v := arg(args, 0)
	switch {
	case v.IsUndefined():
		return jinja.NewInt(0), nil
	case v.IsString():
		return jinja.NewInt(int64(utf8.RuneCountInString(v.AsString()))), nil
	case v.IsList():
		return jinja.NewInt(int64(v.AsList().Len())), nil
	case v.IsDict():
		return jinja.NewInt(int64(v.AsDict().Len())), nil
	}
	return jinja.Undefined(), fmt.Errorf("object of type %s has no len()", pyType(v))
}

// filterCapitalize is str.capitalize: the first character in title case,
// the rest in lower case.
func filterCapitalize(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	s := pyStr(b, arg(args, 0))
	if err := b.Alloc(3 * int64(len(s))); err != nil {
		return jinja.Undefined(), err
	}
	_, n := utf8.DecodeRuneInString(s)
	return str(title.String(s[:n]) + lowerC.String(s[n:])), nil
}

// filterInt is int(value, default=0, base=10).
func filterInt(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	v := arg(args, 0)
	def, ok := param(args, kwargs, 1, "default")
	if !ok {
		def = jinja.NewInt(0)
	}
	base := int64(10)
	if b, ok := param(args, kwargs, 2, "base"); ok && b.IsInt() {
		base = b.AsInt()
	}
	switch {
	case v.IsInt():
		return v, nil
	case v.IsBool():
		return jinja.NewInt(int64(num(v))), nil
	case v.IsFloat():
		if f := v.AsFloat(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return jinja.NewInt(int64(f)), nil
		}
	case v.IsString():
		s := strings.ReplaceAll(strings.TrimFunc(v.AsString(), pyIsSpace), "_", "")
		if i, err := strconv.ParseInt(s, int(base), 64); err == nil {
			return jinja.NewInt(i), nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return jinja.NewInt(int64(f)), nil
		}
	}
	return def, nil
}

// filterFloat is float(value, default=0.0).
func filterFloat(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	v := arg(args, 0)
	def, ok := param(args, kwargs, 1, "default")
	if !ok {
		def = jinja.NewFloat(0)
	}
	switch {
	case v.IsFloat():
		return v, nil
	case v.IsInt(), v.IsBool():
		return jinja.NewFloat(num(v)), nil
	case v.IsString():
		s := strings.ReplaceAll(strings.TrimFunc(v.AsString(), pyIsSpace), "_", "")
		if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return jinja.NewFloat(f), nil
		}
	}
	return def, nil
}

// filterFirst and filterLast are first(seq) and last(seq): an item, a
// character or a key; undefined when empty.
func filterFirst(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(b, arg(args, 0))
	if err != nil || len(items) == 0 {
		return jinja.Undefined(), err
	}
	return items[0], nil
}

func filterLast(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	v := arg(args, 0)
	if v.IsUndefined() {
		return jinja.Undefined(), nil
	}
	items, err := iterate(b, v)
	if err != nil || len(items) == 0 {
		return jinja.Undefined(), err
	}
	return items[len(items)-1], nil
}

// filterIndent is indent(s, width=4, first=False, blank=False).
func filterIndent(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	s := pyStr(b, arg(args, 0))
	ind := "    "
	if w, ok := param(args, kwargs, 1, "width"); ok {
		if w.IsString() {
			ind = w.AsString()
		} else {
			ind = strings.Repeat(" ", int(max(0, min(int64(num(w)), 1<<10))))
		}
	}
	first, _ := param(args, kwargs, 2, "first")
	blank, _ := param(args, kwargs, 3, "blank")
	// Every line may gain the indent: charge the most the result and the
	// split can take before building either.
	n := int64(lineBreaks(s) + 2)
	if err := b.Alloc(int64(len(s)) + jinja.MulSat(n, int64(len(ind))+17)); err != nil {
		return jinja.Undefined(), err
	}
	lines := pySplitLines(s + "\n")
	var out strings.Builder
	if first.IsTruthy() {
		out.WriteString(ind)
	}
	out.WriteString(lines[0])
	for _, l := range lines[1:] {
		out.WriteString("\n")
		if l != "" || blank.IsTruthy() {
			out.WriteString(ind)
			out.WriteString(l)
		}
	}
	return str(out.String()), nil
}

// lineBreaks counts the characters pySplitLines splits at (a "\r\n" pair
// counts twice).
func lineBreaks(s string) int {
	n := 0
	for _, r := range s {
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			n++
		}
	}
	return n
}

// pySplitLines is Python's str.splitlines().
func pySplitLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			lines = append(lines, s[start:i])
			if r == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				n++
			}
			start = i + n
		}
		i += n
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	if len(lines) == 0 {
		lines = []string{""}
	}
	return lines
}

// pyType names v's Python type, for error messages.
func pyType(v jinja.Value) string {
	switch {
	case v.IsNone():
		return "'NoneType'"
	case v.IsBool():
		return "'bool'"
	case v.IsInt():
		return "'int'"
	case v.IsFloat():
		return "'float'"
	case v.IsString():
		return "'str'"
	case v.IsList():
		return "'list'"
	case v.IsDict():
		return "'dict'"
	}
	return "'object'"
}

// filterRound is round(value, precision=0, method="common"): Python's
// round() (half to even on the binary value), or floor or ceil.
func filterRound(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	v := arg(args, 0)
	prec := int64(0)
	if p, ok := param(args, kwargs, 1, "precision"); ok && p.IsInt() {
		prec = p.AsInt()
	}
	method := "common"
	if m, ok := param(args, kwargs, 2, "method"); ok {
		method = pyStr(b, m)
	}
	if !(v.IsInt() || v.IsFloat() || v.IsBool()) {
		return jinja.Undefined(), fmt.Errorf("type %s doesn't define __round__ method", pyType(v))
	}
	f := num(v)
	scale := math.Pow(10, float64(prec))
	switch method {
	case "common":
		if v.IsInt() || v.IsBool() {
			if prec >= 0 {
				return jinja.NewInt(int64(f)), nil
			}
			return jinja.NewInt(int64(math.RoundToEven(f/scale) * scale)), nil
		}
		if prec >= 0 && prec <= 300 {
			r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(prec), 64), 64)
			return jinja.NewFloat(r), nil
		}
		return jinja.NewFloat(math.RoundToEven(f/scale) * scale), nil
	case "floor":
		return jinja.NewFloat(math.Floor(f*scale) / scale), nil
	case "ceil":
		return jinja.NewFloat(math.Ceil(f*scale) / scale), nil
	}
	return jinja.Undefined(), fmt.Errorf("method must be common, ceil or floor")
}
