package template

import (
	"fmt"

	"hearth/engine/template/jinja"
)

// filterSort is sort(value, reverse=False, case_sensitive=False,
// attribute=None): stable, strings compared case-insensitively by default.
func filterSort(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(b, arg(args, 0))
	if err != nil {
		return jinja.Undefined(), err
	}
	reverse, _ := param(args, kwargs, 1, "reverse")
	caseSensitive, _ := param(args, kwargs, 2, "case_sensitive")
	attr, hasAttr := param(args, kwargs, 3, "attribute")
	keys := make([]jinja.Value, len(items))
	for i, item := range items {
		k := item
		if hasAttr && !attr.IsNone() {
			k = getAttr(b, item, attr)
		}
		if !caseSensitive.IsTruthy() {
			k = lower(b, k)
		}
		keys[i] = k
	}
	out, err := sortBy(b, items, keys, reverse.IsTruthy())
	return jinja.NewList(out), err
}

// filterDictsort is dictsort(value, case_sensitive=False, by="key",
// reverse=False), returning [key, value] pairs.
func filterDictsort(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	v := arg(args, 0)
	if !v.IsDict() {
		return jinja.Undefined(), fmt.Errorf("dictsort: %s is not a mapping", shortRepr(v))
	}
	caseSensitive, _ := param(args, kwargs, 1, "case_sensitive")
	by, _ := param(args, kwargs, 2, "by")
	reverse, _ := param(args, kwargs, 3, "reverse")
	pos := 0
	switch pyStr(b, by) {
	case "", "key":
	case "value":
		pos = 1
	default:
		return jinja.Undefined(), fmt.Errorf(`You can only sort by either "key" or "value"`)
	}
	d := v.AsDict()
	pairs := make([]jinja.Value, len(d.Keys))
	keys := make([]jinja.Value, len(d.Keys))
	for i, k := range d.Keys {
		kv := []jinja.Value{str(k), d.Data[k]}
		pairs[i] = jinja.NewList(kv)
		keys[i] = kv[pos]
		if !caseSensitive.IsTruthy() {
			keys[i] = lower(b, keys[i])
		}
	}
	out, err := sortBy(b, pairs, keys, reverse.IsTruthy())
	return jinja.NewList(out), err
}

// filterUnique is unique(value, case_sensitive=False, attribute=None).
func filterUnique(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	items, err := iterate(b, arg(args, 0))
	if err != nil {
		return jinja.Undefined(), err
	}
	caseSensitive, _ := param(args, kwargs, 1, "case_sensitive")
	attr, hasAttr := param(args, kwargs, 2, "attribute")
	var seen []jinja.Value
	var out []jinja.Value
	for _, item := range items {
		k := item
		if hasAttr && !attr.IsNone() {
			k = getAttr(b, item, attr)
		}
		if !caseSensitive.IsTruthy() {
			k = lower(b, k)
		}
		dup := false
		for _, s := range seen {
			if pyEqual(b, s, k) {
				dup = true
				break
			}
		}
		if !dup {
			seen = append(seen, k)
			out = append(out, item)
		}
	}
	return jinja.NewList(out), nil
}

// minMax builds min and max(value, case_sensitive=False, attribute=None).
func minMax(wantMax bool) callable {
	return func(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		items, err := iterate(b, arg(args, 0))
		if err != nil || len(items) == 0 {
			return jinja.Undefined(), err
		}
		caseSensitive, _ := param(args, kwargs, 1, "case_sensitive")
		attr, hasAttr := param(args, kwargs, 2, "attribute")
		key := func(v jinja.Value) jinja.Value {
			if hasAttr && !attr.IsNone() {
				v = getAttr(b, v, attr)
			}
			if !caseSensitive.IsTruthy() {
				v = lower(b, v)
			}
			return v
		}
		best, bestKey := items[0], key(items[0])
		for _, item := range items[1:] {
			k := key(item)
			c, err := pyCompare(b, k, bestKey)
			if err != nil {
				return jinja.Undefined(), err
			}
			if (wantMax && c > 0) || (!wantMax && c < 0) {
				best, bestKey = item, k
			}
		}
		return best, nil
	}
}
