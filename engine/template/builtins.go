package template

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// raised is the error raise_exception returns through the library.
type raised struct{ msg string }

func (r *raised) Error() string { return r.msg }

type callable = func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error)

// globals returns the render-time names that replace or add to the
// library's: transformers' raise_exception and strftime_now, Python's str()
// for printing, and the filters of the filters table.
func globals(now func() time.Time) map[string]jinja.Value {
	fns := map[string]callable{
		"raise_exception": func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			msg := ""
			if len(args) > 0 {
				msg = pyStr(args[0])
			}
			return jinja.Undefined(), &raised{msg: msg}
		},
		"strftime_now": func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) == 0 || !args[0].IsString() {
				return jinja.Undefined(), fmt.Errorf("strftime_now() needs a format string")
			}
			return jinja.NewString(strftime(now(), args[0].AsString())), nil
		},
		"range": pyRange,
		finalizeName: func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return jinja.NewString(pyStr(arg(args, 0))), nil
		},
	}
	for name, f := range filters {
		fns[filterPrefix+name] = f
	}
	out := make(map[string]jinja.Value, len(fns))
	for name, fn := range fns {
		out[name] = jinja.NewCallable(name, fn)
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

func lower(v jinja.Value) jinja.Value {
	if v.IsString() {
		return jinja.NewString(strings.ToLower(v.AsString()))
	}
	return v
}

// sortBy sorts items stably by keys, as Python's sorted(..., reverse=r).
func sortBy(items, keys []jinja.Value, reverse bool) ([]jinja.Value, error) {
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
		c, err := pyCompare(x, y)
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		return c < 0
	})
	out := make([]jinja.Value, len(items))
	for i, j := range idx {
		out[i] = items[j]
	}
	return out, cmpErr
}

// pyCompare orders two values as Python's < does, refusing mixed types.
func pyCompare(a, b jinja.Value) (int, error) {
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
			if c, err := pyCompare(x[i], y[i]); err != nil || c != 0 {
				return c, err
			}
		}
		return len(x) - len(y), nil
	}
	return 0, fmt.Errorf("'<' not supported between %s and %s", pyRepr(a), pyRepr(b))
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
// characters, nothing for undefined.
func iterate(v jinja.Value) ([]jinja.Value, error) {
	switch {
	case v.IsUndefined():
		return nil, nil
	case v.IsList():
		return append([]jinja.Value(nil), v.AsList().Items...), nil
	case v.IsDict():
		keys := make([]jinja.Value, 0, v.AsDict().Len())
		for _, k := range v.AsDict().Keys {
			keys = append(keys, jinja.NewString(k))
		}
		return keys, nil
	case v.IsString():
		var out []jinja.Value
		for _, r := range v.AsString() {
			out = append(out, jinja.NewString(string(r)))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s is not iterable", pyRepr(v))
}

// getAttr follows a Jinja2 attribute path ("a.b.0") as make_attrgetter does.
func getAttr(v, attr jinja.Value) jinja.Value {
	parts := []string{pyStr(attr)}
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
func pyRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
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
	count := int64(0)
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		count = (start - stop - step - 1) / -step
	}
	if count > maxRange {
		return jinja.Undefined(), fmt.Errorf("Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)
	}
	items := make([]jinja.Value, count)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}
