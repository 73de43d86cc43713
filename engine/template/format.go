package template

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"hearth/engine/template/jinja"
)

// filterFormat is Jinja2's format(value, *args, **kwargs):
// str(value) % (kwargs or args), Python's printf-style formatting.
func filterFormat(b *jinja.Budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) > 1 && len(kwargs) > 0 {
		return jinja.Undefined(), fmt.Errorf("can't handle positional and keyword arguments at the same time")
	}
	out, err := percentFormat(b, pyStr(b, arg(args, 0)), args[min(1, len(args)):], kwargs)
	if err != nil {
		return jinja.Undefined(), err
	}
	return str(out), nil
}

// percentFormat implements Python's format % args for the conversions
// d i u o x X e E f F g G c r s a and %, with flags, width and precision.
func percentFormat(bg *jinja.Budget, format string, args []jinja.Value, kwargs map[string]jinja.Value) (string, error) {
	var b strings.Builder
	next := 0
	take := func() (jinja.Value, error) {
		if next >= len(args) {
			return jinja.Undefined(), fmt.Errorf("not enough arguments for format string")
		}
		next++
		return args[next-1], nil
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		i++
		var v jinja.Value
		keyed := false
		if i < len(format) && format[i] == '(' {
			end := strings.IndexByte(format[i:], ')')
			if end < 0 {
				return "", fmt.Errorf("incomplete format key")
			}
			var ok bool
			if v, ok = kwargs[format[i+1:i+end]]; !ok {
				return "", fmt.Errorf("KeyError: %s", pyReprString(format[i+1:i+end]))
			}
			keyed = true
			i += end + 1
		}
		flags := ""
		for i < len(format) && strings.IndexByte("#0- +", format[i]) >= 0 {
			flags += string(format[i])
			i++
		}
		width, prec := -1, -1
		num := func() (int, error) {
			if i < len(format) && format[i] == '*' {
				i++
				a, err := take()
				if err != nil || !a.IsInt() {
					return 0, fmt.Errorf("* wants int")
				}
				return int(min(max(a.AsInt(), -1<<40), 1<<40)), nil
			}
			n := 0
			for i < len(format) && format[i] >= '0' && format[i] <= '9' {
				n = min(n*10+int(format[i]-'0'), 1<<40)
				i++
			}
			return n, nil
		}
		if i < len(format) && (format[i] == '*' || format[i] >= '0' && format[i] <= '9') {
			var err error
			if width, err = num(); err != nil {
				return "", err
			}
		}
		if i < len(format) && format[i] == '.' {
			i++
			var err error
			if prec, err = num(); err != nil {
				return "", err
			}
		}
		for i < len(format) && strings.IndexByte("hlL", format[i]) >= 0 {
			i++
		}
		if i >= len(format) {
			return "", fmt.Errorf("incomplete format")
		}
		conv := format[i]
		if conv == '%' {
			b.WriteByte('%')
			continue
		}
		if !keyed {
			var err error
			if v, err = take(); err != nil {
				return "", err
			}
		}
		// A width or precision is padding the result holds: charge it
		// (with the conversion's own text) before any is built.
		if err := bg.Alloc(int64(max(width, 0)) + int64(max(prec, 0)) + 32); err != nil {
			return "", err
		}
		s, err := convert(bg, conv, flags, prec, v)
		if err != nil {
			return "", err
		}
		if pad := width - len([]rune(s)); pad > 0 {
			switch {
			case strings.Contains(flags, "-"):
				s += strings.Repeat(" ", pad)
			case strings.Contains(flags, "0") && strings.IndexByte("diuoxXeEfFgG", conv) >= 0:
				sign := ""
				if s != "" && (s[0] == '-' || s[0] == '+' || s[0] == ' ') {
					sign, s = s[:1], s[1:]
				}
				s = sign + strings.Repeat("0", pad) + s
			default:
				s = strings.Repeat(" ", pad) + s
			}
		}
		b.WriteString(s)
	}
	if next < len(args) && len(kwargs) == 0 {
		return "", fmt.Errorf("not all arguments converted during string formatting")
	}
	return b.String(), nil
}

// convert formats one value for a conversion character.
func convert(b *jinja.Budget, conv byte, flags string, prec int, v jinja.Value) (string, error) {
	sign := func(s string, neg bool) string {
		switch {
		case neg:
			return "-" + s
		case strings.Contains(flags, "+"):
			return "+" + s
		case strings.Contains(flags, " "):
			return " " + s
		}
		return s
	}
	isNum := v.IsInt() || v.IsFloat() || v.IsBool()
	switch conv {
	case 's', 'r', 'a':
		s := pyStr(b, v)
		if conv != 's' {
			s = pyRepr(b, v)
		}
		if prec >= 0 && prec < len([]rune(s)) {
			s = string([]rune(s)[:prec])
		}
		return s, nil
	case 'c':
		switch {
		case v.IsInt():
			return string(rune(v.AsInt())), nil
		case v.IsString() && len([]rune(v.AsString())) == 1:
			return v.AsString(), nil
		}
		return "", fmt.Errorf("%%c requires an int or a unicode character, not %s", pyType(v))
	case 'd', 'i', 'u', 'o', 'x', 'X':
		if !isNum {
			return "", fmt.Errorf("%%%c format: a real number is required, not %s", conv, pyType(v))
		}
		n := int64(num(v))
		if v.IsInt() {
			n = v.AsInt()
		}
		neg := n < 0
		if neg {
			n = -n
		}
		base := map[byte]int{'o': 8, 'x': 16, 'X': 16}[conv]
		if base == 0 {
			base = 10
		}
		s := strconv.FormatInt(n, base)
		if conv == 'X' {
			s = strings.ToUpper(s)
		}
		if strings.Contains(flags, "#") && base != 10 {
			s = "0" + map[byte]string{'o': "o", 'x': "x", 'X': "X"}[conv] + s
		}
		return sign(s, neg), nil
	case 'e', 'E', 'f', 'F', 'g', 'G':
		if !isNum {
			return "", fmt.Errorf("must be real number, not %s", pyType(v))
		}
		f := num(v)
		if prec < 0 {
			prec = 6
		}
		var s string
		switch {
		case math.IsInf(f, 0) || math.IsNaN(f):
			s = map[bool]string{true: "inf", false: "nan"}[math.IsInf(f, 0)]
		case conv == 'g' || conv == 'G':
			s = strconv.FormatFloat(math.Abs(f), 'g', max(prec, 1), 64)
			if mant, exp, ok := strings.Cut(s, "e"); ok && len(exp) == 2 {
				s = mant + "e" + exp[:1] + "0" + exp[1:]
			}
		default:
			s = strconv.FormatFloat(math.Abs(f), conv|0x20, prec, 64)
			if mant, exp, ok := strings.Cut(s, "e"); ok && len(exp) == 2 {
				s = mant + "e" + exp[:1] + "0" + exp[1:]
			}
		}
		if conv == 'E' || conv == 'F' || conv == 'G' {
			s = strings.ToUpper(s)
		}
		return sign(s, math.Signbit(f) && !math.IsNaN(f)), nil
	}
	return "", fmt.Errorf("unsupported format character %q", conv)
}
