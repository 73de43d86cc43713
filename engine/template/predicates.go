package template

import (
	"fmt"
	"math"
	"strings"

	"hearth/engine/template/jinja"
)

// pyTest evaluates a Jinja2 test ("value is name(args)") with Jinja2 3.1's
// semantics, for the select family of filters.
func pyTest(b *jinja.Budget, name string, v jinja.Value, args []jinja.Value) (bool, error) {
	a := arg(args, 0)
	switch name {
	case "defined":
		return !v.IsUndefined(), nil
	case "undefined":
		return v.IsUndefined(), nil
	case "none":
		return v.IsNone(), nil
	case "boolean":
		return v.IsBool(), nil
	case "true":
		return v.IsBool() && v.AsBool(), nil
	case "false":
		return v.IsBool() && !v.AsBool(), nil
	case "integer":
		return v.IsInt(), nil
	case "float":
		return v.IsFloat(), nil
	case "number":
		return v.IsInt() || v.IsFloat() || v.IsBool(), nil
	case "string":
		return v.IsString(), nil
	case "mapping":
		return v.IsDict(), nil
	case "iterable":
		return v.IsUndefined() || v.IsList() || v.IsDict() || v.IsString(), nil
	case "sequence":
		return v.IsList() || v.IsDict() || v.IsString(), nil
	case "callable":
		return v.IsCallable(), nil
	case "lower":
		s := pyStr(b, v)
		return s == lowerC.String(s), nil
	case "upper":
		s := pyStr(b, v)
		return s == upper.String(s), nil
	case "odd", "even", "divisibleby":
		if !v.IsInt() && !v.IsBool() {
			return false, fmt.Errorf("test %q needs an integer, got %s", name, pyType(v))
		}
		n := int64(num(v))
		switch name {
		case "odd":
			return n%2 != 0, nil
		case "even":
			return n%2 == 0, nil
		}
		if !a.IsInt() || a.AsInt() == 0 {
			return false, fmt.Errorf("divisibleby needs a non-zero integer")
		}
		return n%a.AsInt() == 0, nil
	case "eq", "==", "equalto", "sameas":
		return pyEqual(b, v, a), nil
	case "ne", "!=":
		return !pyEqual(b, v, a), nil
	case "lt", "<", "lessthan", "le", "<=", "gt", ">", "greaterthan", "ge", ">=":
		c, err := pyCompare(b, v, a)
		switch name {
		case "lt", "<", "lessthan":
			return c < 0, err
		case "le", "<=":
			return c <= 0, err
		case "gt", ">", "greaterthan":
			return c > 0, err
		}
		return c >= 0, err
	case "in":
		return pyContains(b, a, v)
	}
	return false, fmt.Errorf("no test named %q", name)
}

// pyEqual is Python's ==, with numbers compared by value, stepping bg
// once per pair of values compared.
func pyEqual(bg *jinja.Budget, a, b jinja.Value) bool {
	if (a.IsInt() || a.IsFloat() || a.IsBool()) && (b.IsInt() || b.IsFloat() || b.IsBool()) {
		return num(a) == num(b) && !math.IsNaN(num(a))
	}
	return jinja.Equal(bg, a, b)
}

// pyContains is Python's "item in container".
func pyContains(b *jinja.Budget, container, item jinja.Value) (bool, error) {
	switch {
	case container.IsString():
		if !item.IsString() {
			return false, fmt.Errorf("'in <string>' requires string as left operand, not %s", pyType(item))
		}
		return strings.Contains(container.AsString(), item.AsString()), nil
	case container.IsDict():
		return item.IsString() && container.AsDict().Has(item.AsString()), nil
	case container.IsList():
		for _, x := range container.AsList().Items {
			if pyEqual(b, x, item) {
				return true, nil
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("argument of type %s is not iterable", pyType(container))
}

// selectFilter builds select, reject, selectattr and rejectattr.
func selectFilter(keep, byAttr bool) callable {
	return func(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		items, err := iterate(b, arg(args, 0))
		if err != nil {
			return jinja.Undefined(), err
		}
		rest := args[min(1, len(args)):]
		var attr jinja.Value
		if byAttr {
			if len(rest) == 0 {
				return jinja.Undefined(), fmt.Errorf("missing parameter for attribute name")
			}
			attr, rest = rest[0], rest[1:]
		}
		var out []jinja.Value
		for _, item := range items {
			v := item
			if byAttr {
				v = getAttr(b, item, attr)
			}
			ok := v.IsTruthy()
			if len(rest) > 0 {
				if ok, err = pyTest(b, pyStr(b, rest[0]), v, rest[1:]); err != nil {
					return jinja.Undefined(), err
				}
			}
			if ok == keep {
				out = append(out, item)
			}
		}
		return jinja.NewList(out), nil
	}
}
