#!/usr/bin/env python3
"""subset_corpus.py writes a keyed-hash share of train.txt's documents
(and valid.txt, stats.json unchanged) into a folder, for a continued run
(train.py --init-from) whose corpus must stay small: the device tool takes
at most 64 MiB of working tree plus carried files per call, and the tree
alone is now about 61.5 MiB, which leaves no room for the whole corpus.

    python3 tools/starter/subset_corpus.py --data .cache/starter/data \\
        --out .cache/starter/subset --frac 0.2
    tar -C .cache/starter/subset -cJf .cache/starter/carry/corpus.tar.xz train.txt valid.txt stats.json

Deterministic; documents keep their order.  Standard library only.
"""

import argparse
import hashlib
import os
import shutil

SEP = "\n<|end_of_text|>\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=".cache/starter/data")
    ap.add_argument("--out", required=True)
    ap.add_argument("--frac", type=float, default=0.2)
    ap.add_argument("--key", default="starter-subset-1")
    a = ap.parse_args()
    with open(os.path.join(a.data, "train.txt"), encoding="utf-8") as f:
        docs = f.read().split(SEP)
    keep = [d for d in docs
            if int.from_bytes(hashlib.sha256((a.key + d).encode()).digest()[:8], "big") / 2 ** 64 < a.frac]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "train.txt"), "w", encoding="utf-8") as f:
        f.write(SEP.join(keep))
    for name in ("valid.txt", "stats.json"):
        shutil.copy(os.path.join(a.data, name), os.path.join(a.out, name))
    chars = sum(map(len, keep))
    print(f"kept {len(keep)} of {len(docs)} documents, {chars / 1e6:.2f} M characters")


if __name__ == "__main__":
    main()
