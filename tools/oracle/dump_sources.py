"""Copy the reference's source files for the named model types into OUT.

Ports are read op for op from the oracle's own code (transformers on the
device machine), so a port starts by fetching it:

    python3 tools/oracle/dump_sources.py --out $OUT/src gemma4 whisper qwen3_vl

Each model type's package directory (modeling, configuration, processing,
image/video/feature processors) is copied as is, plus the version numbers.
"""
import argparse
import os
import shutil

import transformers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("types", nargs="+", help="model types, e.g. gemma4 whisper")
    a = ap.parse_args()
    root = os.path.join(os.path.dirname(transformers.__file__), "models")
    os.makedirs(a.out, exist_ok=True)
    for t in a.types:
        src = os.path.join(root, t)
        if not os.path.isdir(src):
            print(f"{t}: no such model package in transformers {transformers.__version__}")
            continue
        dst = os.path.join(a.out, t)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        print(f"{t}: {len(os.listdir(dst))} files")
    import torch
    with open(os.path.join(a.out, "VERSIONS"), "w") as f:
        f.write(f"transformers {transformers.__version__}\ntorch {torch.__version__}\n")


if __name__ == "__main__":
    main()
