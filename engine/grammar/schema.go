package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SchemaError is a schema the grammar cannot express or that is not a
// valid JSON schema: the API answers it with a 400 naming Keyword.
type SchemaError struct {
	Path    string // JSON pointer of the schema node, "#/properties/age"
	Keyword string // the keyword at fault ("pattern", "$ref", …)
	Msg     string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("json schema %s: %s: %s", e.Path, e.Keyword, e.Msg)
}

// Budgets for compiling outside input: a schema comes with a request.
const (
	maxSchemaBytes  = 256 << 10
	maxSchemaDepth  = 64
	maxStates       = 200_000
	maxBoundedCount = 512 // the largest bounded repetition (maxLength, maxItems) written out
)

// annotations are keywords that say nothing about which texts are valid.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true, orderKey: true,
}

// JSONObject is the grammar of OpenAI's response_format json_object and
// Ollama's format "json": any JSON object.
func JSONObject() *Grammar {
	b := &builder{maxStates: maxStates}
	l := b.lexemes()
	root := b.newRule()
	// A value that starts with '{' is an object: the any-value rule,
	// entered through its object branch.
	// No whitespace around the value: the answer starts at its first
	// character and ends at its last (then only the end can come).
	b.define(root, b.objectOnly(l))
	g, err := b.finish(root)
	if err != nil {
		panic(err) // a fixed grammar: cannot fail
	}
	return g
}

// objectOnly reads a JSON object of any members.
func (b *builder) objectOnly(l lexemes) frag {
	member := func() frag {
		return b.seq(b.call(l.str), b.ws(), b.lit(":"), b.ws(), b.call(l.value))
	}
	return b.seq(b.lit("{"), b.ws(), b.opt(b.seq(member(),
		b.star(b.seq(b.ws(), b.lit(","), b.ws(), member())), b.ws())), b.lit("}"))
}

// Schema compiles a JSON schema to the grammar of the JSON texts it
// validates, with properties in the order the schema lists them (as
// OpenAI's strict mode writes them) and no properties it does not list.
func Schema(raw []byte) (*Grammar, error) { return SchemaFramed(raw, "", "") }

// SchemaFramed is Schema with literal text before and after the value: a
// tool call in a model's own syntax (<tool_call>\n{…}\n</tool_call>).
func SchemaFramed(raw []byte, prefix, suffix string) (*Grammar, error) {
	if len(raw) > maxSchemaBytes {
		return nil, &SchemaError{"#", "schema", fmt.Sprintf("%d bytes is more than %d", len(raw), maxSchemaBytes)}
	}
	root, err := decodeOrdered(raw)
	if err != nil {
		return nil, &SchemaError{"#", "schema", "not JSON: " + err.Error()}
	}
	c := &compiler{b: &builder{maxStates: maxStates}, root: root, refs: map[string]int32{}}
	c.l = c.b.lexemes()
	top := c.b.newRule()
	body := c.node(root, "#", 0)
	if c.err != nil {
		return nil, c.err
	}
	c.b.define(top, c.b.seq(c.b.lit(prefix), body, c.b.lit(suffix)))
	g, err := c.b.finish(top)
	if errors.Is(err, errBudget) {
		return nil, &SchemaError{"#", "schema", err.Error() + fmt.Sprintf(" (more than %d states)", maxStates)}
	}
	return g, err
}

type compiler struct {
	b    *builder
	l    lexemes
	root any
	refs map[string]int32 // $ref target → its rule
	err  error
}

func (c *compiler) fail(path, keyword, format string, args ...any) frag {
	if c.err == nil {
		c.err = &SchemaError{path, keyword, fmt.Sprintf(format, args...)}
	}
	return c.b.empty()
}

// node compiles the schema s found at path.
func (c *compiler) node(s any, path string, depth int) frag {
	b := c.b
	if c.err != nil {
		return b.empty()
	}
	if depth > maxSchemaDepth {
		return c.fail(path, "schema", "nested more than %d deep", maxSchemaDepth)
	}
	switch v := s.(type) {
	case bool:
		if v {
			return b.call(c.l.value)
		}
		return c.fail(path, "false", "a false schema accepts nothing")
	case map[string]any:
		return c.object(v, path, depth)
	}
	return c.fail(path, "schema", "a schema is an object or a boolean")
}

func (c *compiler) object(s map[string]any, path string, depth int) frag {
	b := c.b
	for k := range s {
		if !annotations[k] && !known[k] {
			return c.fail(path, k, "this keyword is not supported for constrained output")
		}
	}
	if ref, ok := s["$ref"]; ok {
		if len(s) > 1 && hasValidation(s, "$ref") {
			return c.fail(path, "$ref", "a $ref beside other validation keywords is not supported")
		}
		return c.ref(ref, path, depth)
	}
	if v, ok := s["const"]; ok {
		return c.literals([]any{v}, path, "const")
	}
	if v, ok := s["enum"]; ok {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return c.fail(path, "enum", "must be a non-empty array")
		}
		return c.literals(list, path, "enum")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if v, ok := s[k]; ok {
			// oneOf is read as anyOf: the grammar cannot check that
			// exactly one branch matches.
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return c.fail(path, k, "must be a non-empty array")
			}
			alts := make([]frag, len(list))
			for i, sub := range list {
				alts[i] = c.node(merge(s, sub, k), fmt.Sprintf("%s/%s/%d", path, k, i), depth+1)
			}
			return b.alt(alts...)
		}
	}
	if v, ok := s["allOf"]; ok {
		list, ok := v.([]any)
		if !ok || len(list) != 1 {
			return c.fail(path, "allOf", "only an allOf of one schema is supported")
		}
		return c.node(merge(s, list[0], "allOf"), path+"/allOf/0", depth+1)
	}
	var types []string
	switch t := s["type"].(type) {
	case nil:
		types = inferTypes(s)
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			name, ok := x.(string)
			if !ok {
				return c.fail(path, "type", "must be a string or an array of strings")
			}
			types = append(types, name)
		}
	default:
		return c.fail(path, "type", "must be a string or an array of strings")
	}
	if len(types) == 0 {
		return b.call(c.l.value)
	}
	alts := make([]frag, 0, len(types))
	for _, t := range types {
		alts = append(alts, c.typed(t, s, path, depth))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return b.alt(alts...)
}

// known lists the validation keywords the compiler reads.
var known = map[string]bool{
	"type": true, "enum": true, "const": true, "anyOf": true, "oneOf": true, "allOf": true, "$ref": true,
	"properties": true, "required": true, "additionalProperties": true,
	"items": true, "prefixItems": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"nullable": true,
}

func hasValidation(s map[string]any, except string) bool {
	for k := range s {
		if k != except && known[k] {
			return true
		}
	}
	return false
}

// merge gives a branch of anyOf/oneOf/allOf the keywords of the schema
// around it (a "type" or "properties" written beside the anyOf), so each
// branch compiles alone.
func merge(outer map[string]any, branch any, drop string) any {
	m, ok := branch.(map[string]any)
	if !ok {
		return branch
	}
	out := map[string]any{}
	for k, v := range outer {
		if k != drop && known[k] {
			out[k] = v
		}
	}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// inferTypes reads the type a schema without "type" implies from its
// keywords (a schema of only "properties" describes objects).
func inferTypes(s map[string]any) []string {
	switch {
	case s["properties"] != nil || s["required"] != nil || s["additionalProperties"] != nil:
		return []string{"object"}
	case s["items"] != nil || s["prefixItems"] != nil:
		return []string{"array"}
	case s["pattern"] != nil || s["format"] != nil || s["minLength"] != nil || s["maxLength"] != nil:
		return []string{"string"}
	}
	return nil
}

func (c *compiler) typed(t string, s map[string]any, path string, depth int) frag {
	b := c.b
	switch t {
	case "null":
		return b.lit("null")
	case "boolean":
		return b.alt(b.lit("true"), b.lit("false"))
	case "string":
		return c.str(s, path)
	case "integer":
		return c.integer(s, path)
	case "number":
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if _, ok := s[k]; ok {
				return c.fail(path, k, "bounds on non-integer numbers are not supported")
			}
		}
		return b.call(c.l.num)
	case "array":
		return c.array(s, path, depth)
	case "object":
		return c.obj(s, path, depth)
	}
	return c.fail(path, "type", "unknown type %q", t)
}

func (c *compiler) ref(v any, path string, depth int) frag {
	ref, ok := v.(string)
	if !ok {
		return c.fail(path, "$ref", "must be a string")
	}
	if r, ok := c.refs[ref]; ok {
		return c.b.call(r)
	}
	target, err := resolvePointer(c.root, ref)
	if err != nil {
		return c.fail(path, "$ref", "%v", err)
	}
	r := c.b.newRule()
	c.refs[ref] = r // before compiling the target: it may refer to itself
	body := c.node(target, ref, depth+1)
	if c.err != nil {
		return c.b.empty()
	}
	c.b.define(r, body)
	return c.b.call(r)
}

// resolvePointer follows a local reference ("#", "#/$defs/x").
func resolvePointer(root any, ref string) (any, error) {
	if ref == "#" {
		return root, nil
	}
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("%q: only references inside the schema (#/...) are supported", ref)
	}
	cur := root
	for _, part := range strings.Split(rest, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[part]
			if !ok {
				return nil, fmt.Errorf("%q: no %q", ref, part)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v) {
				return nil, fmt.Errorf("%q: no item %q", ref, part)
			}
			cur = v[i]
		default:
			return nil, fmt.Errorf("%q: %q is not inside an object", ref, part)
		}
	}
	return cur, nil
}

// literals reads any of the values, written as compact JSON.
func (c *compiler) literals(vals []any, path, keyword string) frag {
	alts := make([]frag, 0, len(vals))
	for _, v := range vals {
		text, err := json.Marshal(plain(v))
		if err != nil {
			return c.fail(path, keyword, "%v", err)
		}
		alts = append(alts, c.b.lit(string(text)))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return c.b.alt(alts...)
}

// count reads a non-negative integer keyword.
func (c *compiler) count(s map[string]any, key, path string) (int, bool) {
	v, ok := s[key]
	if !ok {
		return 0, false
	}
	n, ok := v.(json.Number)
	i, err := strconv.ParseInt(string(n), 10, 64)
	if !ok || err != nil || i < 0 {
		c.fail(path, key, "must be a non-negative integer")
		return 0, false
	}
	return int(min(i, math.MaxInt32)), true
}

func (c *compiler) str(s map[string]any, path string) frag {
	b := c.b
	lo, hasLo := c.count(s, "minLength", path)
	hi, hasHi := c.count(s, "maxLength", path)
	if p, ok := s["pattern"]; ok {
		if hasLo || hasHi {
			return c.fail(path, "pattern", "a pattern with minLength or maxLength is not supported")
		}
		src, ok := p.(string)
		if !ok {
			return c.fail(path, "pattern", "must be a string")
		}
		return c.pattern(src, path, "pattern")
	}
	if f, ok := s["format"]; ok {
		name, _ := f.(string)
		src, ok := formats[name]
		if !ok {
			return c.fail(path, "format", "format %q is not supported (supported: %s)", name, strings.Join(formatNames(), ", "))
		}
		return c.pattern(src, path, "format")
	}
	if !hasLo && !hasHi {
		return b.call(c.l.str)
	}
	if !hasHi {
		hi = -1
	}
	if lo > maxBoundedCount || hi > maxBoundedCount || (hasHi && hi < lo) {
		return c.fail(path, "maxLength", "length bounds above %d (or max below min) are not supported", maxBoundedCount)
	}
	return b.seq(b.lit(`"`), b.rep(func() frag { return b.jsonChar() }, lo, hi), b.lit(`"`))
}

func (c *compiler) array(s map[string]any, path string, depth int) frag {
	b := c.b
	lo, _ := c.count(s, "minItems", path)
	hi, hasHi := c.count(s, "maxItems", path)
	if !hasHi {
		hi = -1
	}
	var prefix []any
	if p, ok := s["prefixItems"]; ok {
		list, ok := p.([]any)
		if !ok {
			return c.fail(path, "prefixItems", "must be an array")
		}
		prefix = list
	}
	items, hasItems := s["items"]
	if no, ok := items.(bool); ok && !no {
		// No items past the prefix.
		if hi < 0 || hi > len(prefix) {
			hi = len(prefix)
		}
	} else if !hasItems {
		items = true
	}
	if lo > maxBoundedCount || hi > maxBoundedCount || (hi >= 0 && hi < lo) {
		return c.fail(path, "maxItems", "item bounds above %d (or max below min) are not supported", maxBoundedCount)
	}
	sep := func() frag { return b.seq(b.ws(), b.lit(","), b.ws()) }
	// item(i) reads position i, with the comma before it when i > 0.
	item := func(i int) frag {
		var v frag
		if i < len(prefix) {
			v = c.node(prefix[i], fmt.Sprintf("%s/prefixItems/%d", path, i), depth+1)
		} else {
			v = c.node(items, path+"/items", depth+1)
		}
		if i == 0 {
			return v
		}
		return b.seq(sep(), v)
	}
	// tail(i) reads the optional positions from i on: each of the prefix
	// positions in turn, then any number of items up to hi.
	var tail func(i int) frag
	tail = func(i int) frag {
		if hi >= 0 && i >= hi {
			return b.empty()
		}
		if i < len(prefix) {
			return b.opt(b.seq(item(i), tail(i+1)))
		}
		if i == 0 {
			first := item(0)
			return b.opt(b.seq(first, tail(1)))
		}
		if hi < 0 {
			return b.star(item(i))
		}
		return b.rep(func() frag { return item(i) }, 0, hi-i)
	}
	parts := []frag{b.lit("["), b.ws()}
	for i := range lo {
		parts = append(parts, item(i))
	}
	parts = append(parts, tail(lo), b.ws(), b.lit("]"))
	return b.seq(parts...)
}

func (c *compiler) obj(s map[string]any, path string, depth int) frag {
	b := c.b
	props, _ := s["properties"].(map[string]any)
	if s["properties"] != nil && props == nil {
		return c.fail(path, "properties", "must be an object")
	}
	required := map[string]bool{}
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return c.fail(path, "required", "must be an array of names")
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return c.fail(path, "required", "must be an array of names")
			}
			if _, listed := props[name]; !listed {
				return c.fail(path, "required", "%q is required but not among the properties", name)
			}
			required[name] = true
		}
	}
	names := orderedKeys(props)
	if len(names) == 0 {
		// A free-form object, or a map whose values follow
		// additionalProperties.
		ap, ok := s["additionalProperties"]
		if !ok || ap == true {
			return b.objectOnly(c.l)
		}
		if ap == false {
			return b.seq(b.lit("{"), b.ws(), b.lit("}"))
		}
		member := func() frag {
			return b.seq(b.call(c.l.str), b.ws(), b.lit(":"), b.ws(), c.node(ap, path+"/additionalProperties", depth+1))
		}
		return b.seq(b.lit("{"), b.ws(), b.opt(b.seq(member(),
			b.star(b.seq(b.ws(), b.lit(","), b.ws(), member())), b.ws())), b.lit("}"))
	}
	// Two chains of states: before[i][0] when no member was written yet,
	// before[i][1] after one was (so the next needs a comma first).
	n := len(names)
	first, rest := make([]int32, n+1), make([]int32, n+1)
	for i := range first {
		first[i], rest[i] = b.state(), b.state()
	}
	for i, name := range names {
		key, _ := json.Marshal(name)
		value := func() frag {
			return c.node(props[name], path+"/properties/"+escapePointer(name), depth+1)
		}
		member := func(comma bool) frag {
			parts := []frag{}
			if comma {
				parts = append(parts, b.ws(), b.lit(","), b.ws())
			}
			parts = append(parts, b.lit(string(key)), b.ws(), b.lit(":"), b.ws(), value())
			return b.seq(parts...)
		}
		m0, m1 := member(false), member(true)
		b.eps(first[i], m0.start)
		b.eps(m0.end, rest[i+1])
		b.eps(rest[i], m1.start)
		b.eps(m1.end, rest[i+1])
		if !required[name] {
			b.eps(first[i], first[i+1])
			b.eps(rest[i], rest[i+1])
		}
	}
	end := b.state()
	b.eps(first[n], end)
	b.eps(rest[n], end)
	open := b.seq(b.lit("{"), b.ws())
	b.eps(open.end, first[0])
	close := b.seq(b.ws(), b.lit("}"))
	b.eps(end, close.start)
	return frag{open.start, close.end}
}

// orderedKeys lists a properties object's names in the order the schema
// text gives them (kept by decodeOrdered).
func orderedKeys(props map[string]any) []string {
	if order, ok := props[orderKey].([]string); ok {
		return order
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// plain is v without the key orders decodeOrdered records.
func plain(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if k != orderKey {
				out[k] = plain(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = plain(x)
		}
		return out
	}
	return v
}

// orderKey is where decodeOrdered keeps each object's key order.
const orderKey = "\x00order"

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
