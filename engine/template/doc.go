// Package template renders a checkpoint's own Jinja chat template as Hugging
// Face transformers' apply_chat_template renders it with Python Jinja2: an
// ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loop
// controls, {% generation %}, raise_exception, strftime_now and transformers'
// tojson (json.dumps with ensure_ascii=False), called with messages, tools
// (None when absent), documents=None, add_generation_prompt, the special
// tokens of tokenizer_config.json and any other chat_template_kwargs.
//
// # How
//
// The evaluator is github.com/ardanlabs/jinja v1.8.0, copied into
// engine/template/jinja to run every render under a budget (see Limits
// below and its README). Load and Parse first rewrite
// the template (lexer.go): a lexer that follows jinja2.lexer makes every
// whitespace decision (newline normalization, the dropped trailing newline,
// "-" and "+" markers, lstrip_blocks, trim_blocks), turns text into string
// literals, decodes string escapes as Python does, wraps each {{ expr }} so
// that it prints as Python's str() prints, and renames the filters that
// filters.go reimplements with Jinja2's semantics (tojson, string, trim,
// join, escape, sort, dictsort, list, map, format, length, upper, lower,
// capitalize, int, float, first, last, indent, select, reject, selectattr,
// rejectattr, unique, min, max, round). Render decodes the request's
// messages, tools and kwargs into ordered values (key order kept, integers
// distinct from floats), so tojson writes what the client sent in the order
// it was sent.
//
// testdata/golden holds Python's renderings (tools/tmplgold/gold.py) of
// every template in testdata/templates for every conversation in
// testdata/conversations.json, and of each small template in
// testdata/snippets.json; the tests compare them byte for byte.
//
// # Where the output is not Python's
//
// These come from the library's evaluator, whose semantics the copy keeps;
// each is pinned by a test (knownDivergent, knownSnippetDivergent):
//
//   - Python raises, the library renders: an attribute or item of an
//     undefined value (messages[0]['role'] with no messages), str + None or
//     str + list (it concatenates their str()), "x" in None (false),
//     x // 0 and x % 0 (0), and list.append and other mutations that the
//     immutable sandbox forbids. None of the templates raise on a
//     well-formed conversation; a request with content null on an assistant
//     tool-call message or a list of content parts on a text-only template is
//     where this shows (Qwen3 and gpt-oss render it, Python raises).
//   - Operators and methods: "~" prints None as "" and floats with %g;
//     int ** int is a float; int * str is 0; str % args is 0 (the format
//     filter is exact); a filter binds tighter than unary minus (-3|abs is
//     -3); str.split ignores maxsplit; str.lstrip()/rstrip() without
//     arguments strip only space, tab, CR and LF; str.title() and
//     str.capitalize() leave the other letters' case.
//   - Tests in "x is test": "number" is false for booleans, "iterable" false
//     for undefined, "sequence" true only for lists; divisibleby, escaped,
//     filter and test are unknown. (The select family uses Python's tests.)
//   - dict(...) and namespace(...) keep their keyword arguments in Go map
//     order, which is random: visible only if such a dict is printed or
//     passed to tojson. dictsort yields lists, so printing a pair shows
//     [k, v] where Python shows (k, v).
//   - Syntax the library lacks: {% set a, b = ... %}, {% with %}, recursive
//     loops; filters it lacks (center, truncate, wordwrap, groupby, attr,
//     slice, urlencode, pprint, filesizeformat, xmlattr, striptags) fail the
//     render as unknown.
//
// And in this package: integers beyond int64 in the request become floats
// (Python keeps them exact); a \N{NAME} escape in a template string literal
// is refused at load; strftime_now knows the C-locale directives of glibc
// (aAbBcdDeFHIjmMpSTUwWxXyY%, and the "-" flag), with %z and %Z empty as for
// Python's naive datetime.now().
//
// # Limits
//
// A template is outside input, so Render runs it under Options.Limits and
// the request's context: nested macro calls, loop iterations, output
// bytes, bytes of strings and lists built (charged before they are built)
// and wall time, with nesting bounded at parse and render time so no
// template can overflow the stack. A template past a limit fails its
// request with an *Error whose Limit names it ("chat template: exceeded
// 1000000 loop iterations"); a cancelled context stops the render within a
// few thousand steps. DefaultLimits are orders of magnitude above what the
// templates in testdata use (TestLimitsHeadroom), and the byte and
// iteration limits grow with the request's size.
//
// # BOS
//
// Many templates write the BOS token themselves ({{ bos_token }}). The
// engine tokenizes a rendered prompt with addSpecial=false when
// StartsWithBOS reports that it already begins with BOS, and with
// addSpecial=true otherwise, so a prompt never starts with two BOS tokens.
// transformers' apply_chat_template(tokenize=True) always tokenizes with
// add_special_tokens=False; the two rules differ only for a template that
// does not write BOS on a tokenizer that adds one.
package template
