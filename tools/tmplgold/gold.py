#!/usr/bin/env python3
"""gold.py writes engine/template/testdata/golden/<template>.json: every chat
template under engine/template/testdata/templates rendered, with Python Jinja2,
for every conversation in engine/template/testdata/conversations.json; and
golden/snippets.json: each small template of testdata/snippets.json rendered
with its context.

The Jinja2 environment and the render call copy transformers'
apply_chat_template (src/transformers/utils/chat_template_utils.py,
_compile_jinja_template and render_jinja_template):

  * ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with
    the loopcontrols extension and a {% generation %} block that renders its
    body unchanged (transformers' AssistantTracker when it is not tracking);
  * the tojson filter replaced by json.dumps(x, ensure_ascii=False,
    indent=indent, separators=separators, sort_keys=sort_keys);
  * globals raise_exception (raises TemplateError(message)) and strftime_now;
  * render(messages=..., tools=<list or None>, documents=None,
    add_generation_prompt=..., **special_tokens_map, **chat_template_kwargs),
    where special_tokens_map holds bos_token, eos_token, unk_token, sep_token,
    pad_token, cls_token, mask_token and additional_special_tokens from
    tokenizer_config.json when set (an AddedToken object gives its content);
  * the template is chat_template.jinja when the directory has one, otherwise
    tokenizer_config.json's chat_template; a list of {name, template} picks
    "tool_use" when tools are given and the list has it, else "default".

One departure, so that goldens are reproducible: strftime_now reads a fixed
clock, 2024-07-26 09:05:03 (the Go test sets the same instant).

Usage (from the repository root; needs python3 with jinja2 3.1):
    python3 tools/tmplgold/gold.py
"""

import json
import sys
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = Path(__file__).resolve().parents[2]
TESTDATA = ROOT / "engine" / "template" / "testdata"
FIXED_NOW = datetime(2024, 7, 26, 9, 5, 3)
SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


class GenerationBlock(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %} renders its body, as transformers'
    AssistantTracker does when no assistant mask is being collected."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_passthrough"), [], [], body).set_lineno(lineno)

    def _passthrough(self, caller):
        return caller()


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return FIXED_NOW.strftime(format)


def compile_template(source):
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def token_text(tok):
    if isinstance(tok, dict):
        return tok.get("content")
    return tok


def load(dirpath):
    """Returns (templates by name, special tokens map) as transformers loads them."""
    config = json.loads((dirpath / "tokenizer_config.json").read_text(encoding="utf-8"))
    special = {}
    for key in SPECIAL_KEYS:
        text = token_text(config.get(key))
        if text is not None:
            special[key] = text
    if config.get("additional_special_tokens"):
        special["additional_special_tokens"] = [token_text(t) for t in config["additional_special_tokens"]]
    jinja_file = dirpath / "chat_template.jinja"
    if jinja_file.exists():
        return {"default": jinja_file.read_text(encoding="utf-8")}, special
    ct = config.get("chat_template")
    if ct is None:
        return None, special
    if isinstance(ct, list):
        return {t["name"]: t["template"] for t in ct}, special
    return {"default": ct}, special


def pick(templates, tools):
    if tools is not None and "tool_use" in templates:
        return templates["tool_use"]
    return templates["default"]


def render(source, special, case):
    """Renders like transformers' render_jinja_template; case holds messages,
    tools, add_generation_prompt, enable_thinking and extra kwargs."""
    kwargs = dict(special)
    if "enable_thinking" in case:
        kwargs["enable_thinking"] = case["enable_thinking"]
    kwargs.update(case.get("extra", {}))
    try:
        out = compile_template(source).render(
            messages=case.get("messages", []),
            tools=case.get("tools"),
            documents=None,
            add_generation_prompt=case.get("add_generation_prompt", False),
            **kwargs,
        )
        return {"name": case["name"], "output": out}
    except Exception as e:  # the template raised: record what transformers would surface
        return {"name": case["name"], "error": str(e), "error_type": type(e).__name__}


def snippet_case(snippet):
    ctx = dict(snippet["context"])
    case = {"name": snippet["name"]}
    for key in ("messages", "tools", "add_generation_prompt"):
        if key in ctx:
            case[key] = ctx.pop(key)
    case["extra"] = ctx
    return case


def write(path, golden):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errs = sum(1 for c in golden["cases"] if "error" in c)
    print(f"{path.name}: {len(golden['cases'])} cases, {errs} raise", file=sys.stderr)


def main() -> int:
    cases = json.loads((TESTDATA / "conversations.json").read_text(encoding="utf-8"))["cases"]
    outdir = TESTDATA / "golden"
    outdir.mkdir(exist_ok=True)
    header = {
        "generator": "tools/tmplgold/gold.py",
        "jinja2": jinja2.__version__,
        "python": sys.version.split()[0],
        "now": FIXED_NOW.isoformat(),
    }
    for dirpath in sorted(p for p in (TESTDATA / "templates").iterdir() if p.is_dir()):
        templates, special = load(dirpath)
        if templates is None:
            continue  # no chat template shipped (Load must fail for these)
        results = [render(pick(templates, c.get("tools")), special, c) for c in cases]
        write(outdir / f"{dirpath.name}.json", {"template": dirpath.name, **header, "cases": results})

    snippets = json.loads((TESTDATA / "snippets.json").read_text(encoding="utf-8"))["cases"]
    results = [render(s["template"], {}, snippet_case(s)) for s in snippets]
    write(outdir / "snippets.json", {**header, "cases": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
