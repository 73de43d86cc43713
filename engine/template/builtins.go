package template

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"hearth/engine/template/jinja"
)

// raised is the error raise_exception returns through the library.
type raised struct{ msg string }

func (r *raised) Error() string { return r.msg }

type callable = func(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error)

// globals returns the render-time names that replace or add to the
// library's: transformers' raise_exception and strftime_now, Python's str()
// for printing, and the filters of the filters table.
func globals(now func() time.Time) map[string]jinja.Value {
	fns := map[string]callable{
		"raise_exception": func(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			msg := ""
			if len(args) > 0 {
				msg = pyStr(b, args[0])
			}
			return jinja.Undefined(), &raised{msg: msg}
		},
		"strftime_now": func(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) == 0 || !args[0].IsString() {
				return jinja.Undefined(), fmt.Errorf("strftime_now() needs a format string")
			}
			// No directive writes more than twelve bytes per byte.
			if err := b.Alloc(12 * int64(len(args[0].AsString()))); err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewString(strftime(now(), args[0].AsString())), nil
		},
		"range": pyRange,
		finalizeName: func(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return jinja.NewString(pyStr(b, arg(args, 0))), nil
		},
	}
	for name, f := range filters {
		fns[filterPrefix+name] = f
	}
	out := make(map[string]jinja.Value, len(fns))
	for name, fn := range fns {
		out[name] = jinja.NewBudgetCallable(name, fn)
	}
	return out
}

// arg returns the i-th positional argument, or undefined.
func arg(args []jinja.Value, i int) jinja.Value {
	if i < len(args) {
		return args[i]
	}
	return jinja.Undefined()
}

// param returns a filter parameter given by keyword or at position i.
func param(args []jinja.Value, kwargs map[string]jinja.Value, i int, name string) (jinja.Value, bool) {
	if v, ok := kwargs[name]; ok {
		return v, true
	}
	if i < len(args) {
		return args[i], true
	}
	return jinja.Undefined(), false
}

func lower(b *jinja.Budget, v jinja.Value) jinja.Value {
	if v.IsString() && b.Alloc(int64(len(v.AsString()))) == nil {
		return jinja.NewString(strings.ToLower(v.AsString()))
	}
	return v
}

// sortBy sorts items stably by keys, as Python's sorted(..., reverse=r).
func sortBy(bg *jinja.Budget, items, keys []jinja.Value, reverse bool) ([]jinja.Value, error) {
	if err := bg.AllocItems(2 * len(items)); err != nil {
		return nil, err
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var cmpErr error
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := keys[idx[a]], keys[idx[b]]
		if reverse {
			x, y = y, x
		}
		c, err := pyCompare(bg, x, y)
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		return c < 0
	})
	out := make([]jinja.Value, len(items))
	for i, j := range idx {
		out[i] = items[j]
	}
	if err := bg.Err(); err != nil {
		return nil, err
	}
	return out, cmpErr
}

// pyCompare orders two values as Python's < does, refusing mixed types,
// stepping bg once per pair of values compared.
func pyCompare(bg *jinja.Budget, a, b jinja.Value) (int, error) {
	return compare(bg, a, b, 1)
}

func compare(bg *jinja.Budget, a, b jinja.Value, depth int) (int, error) {
	if err := bg.Nest(depth); err != nil {
		return 0, err
	}
	isNum := func(v jinja.Value) bool { return v.IsInt() || v.IsFloat() || v.IsBool() }
	switch {
	case isNum(a) && isNum(b):
		x, y := num(a), num(b)
		switch {
		case x < y:
			return -1, nil
		case x > y:
			return 1, nil
		}
		return 0, nil
	case a.IsString() && b.IsString():
		return strings.Compare(a.AsString(), b.AsString()), nil
	case a.IsList() && b.IsList():
		x, y := a.AsList().Items, b.AsList().Items
		for i := 0; i < len(x) && i < len(y); i++ {
			if c, err := compare(bg, x[i], y[i], depth+1); err != nil || c != 0 {
				return c, err
			}
		}
		return len(x) - len(y), nil
	}
	return 0, fmt.Errorf("'<' not supported between %s and %s", shortRepr(a), shortRepr(b))
}

func num(v jinja.Value) float64 {
	switch {
	case v.IsInt():
		return float64(v.AsInt())
	case v.IsFloat():
		return v.AsFloat()
	case v.IsBool() && v.AsBool():
		return 1
	}
	return 0
}

// iterate lists what Python's iter() yields: list items, dict keys, string
// characters, nothing for undefined. The new list is charged to b.
func iterate(b *jinja.Budget, v jinja.Value) ([]jinja.Value, error) {
	switch {
	case v.IsUndefined():
		return nil, nil
	case v.IsList():
		if err := b.AllocItems(v.AsList().Len()); err != nil {
			return nil, err
		}
		return append([]jinja.Value(nil), v.AsList().Items...), nil
	case v.IsDict():
		if err := b.AllocItems(v.AsDict().Len()); err != nil {
			return nil, err
		}
		keys := make([]jinja.Value, 0, v.AsDict().Len())
		for _, k := range v.AsDict().Keys {
			keys = append(keys, jinja.NewString(k))
		}
		return keys, nil
	case v.IsString():
		if err := b.AllocItems(utf8.RuneCountInString(v.AsString())); err != nil {
			return nil, err
		}
		out := make([]jinja.Value, 0, utf8.RuneCountInString(v.AsString()))
		for _, r := range v.AsString() {
			out = append(out, jinja.NewString(string(r)))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s is not iterable", shortRepr(v))
}

// getAttr follows a Jinja2 attribute path ("a.b.0") as make_attrgetter does.
func getAttr(b *jinja.Budget, v, attr jinja.Value) jinja.Value {
	parts := []string{pyStr(b, attr)}
	if attr.IsString() {
		parts = strings.Split(attr.AsString(), ".")
	}
	for _, p := range parts {
		switch {
		case v.IsDict():
			if x, ok := v.AsDict().Get(p); ok {
				v = x
				continue
			}
			return jinja.Undefined()
		case v.IsList():
			var i int
			if _, err := fmt.Sscanf(p, "%d", &i); err == nil && i >= 0 && i < v.AsList().Len() {
				v = v.AsList().Items[i]
				continue
			}
			return jinja.Undefined()
		default:
			return jinja.Undefined()
		}
	}
	return v
}

// maxRange is Jinja2's sandbox limit on range().
const maxRange = 100000

// pyRange is the sandbox's range(start, stop, step).
func pyRange(b *jinja.Budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var n [3]int64
	for i, a := range args {
		if i >= 3 || !(a.IsInt() || a.IsBool()) {
			return jinja.Undefined(), fmt.Errorf("range() takes 1 to 3 integers")
		}
		n[i] = int64(num(a))
	}
	start, stop, step := int64(0), n[0], int64(1)
	switch len(args) {
	case 0:
		return jinja.Undefined(), fmt.Errorf("range expected at least 1 argument, got 0")
	case 2, 3:
		start, stop = n[0], n[1]
		if len(args) == 3 {
			step = n[2]
		}
	}
	if step == 0 {
		return jinja.Undefined(), fmt.Errorf("range() arg 3 must not be zero")
	}
	count := jinja.RangeLen(start, stop, step)
	if count > maxRange {
		return jinja.Undefined(), fmt.Errorf("Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)
	}
	if err := b.AllocItems(int(count)); err != nil {
		return jinja.Undefined(), err
	}
	items := make([]jinja.Value, count)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}
