#!/usr/bin/env python3
"""build_corpus.py assembles the starter model's English training text.

It reads permissively licensed text installed by install-sources.sh (Debian
packages), turns it into plain text, removes exact and near-duplicate
paragraphs, holds out a validation split by document, and writes

    OUT/train.txt  OUT/valid.txt  OUT/stats.json

Documents are separated by a line holding only <|end_of_text|>.  Inputs are
read in sorted order and every random choice comes from --seed, so two runs on
the same package versions give byte-identical files.  Standard library only.

    python3 tools/starter/build_corpus.py --out .cache/starter/data
"""

import argparse
import fnmatch
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from html_text import html_to_text  # noqa: E402
from text_norm import norm_text, paragraphs  # noqa: E402

DOC_SEP = "<|end_of_text|>"

# Man-page licences accepted (SPDX ids and the man-pages project's
# %%%LICENSE_START tags).  A page is taken only when every marker in it is
# here, no stanza of debian/copyright that names it says GPL, and no part
# of the page (an example program) carries a GPL notice: GPL text is left
# out (docs/starter-model.md says why).
MAN_OK = {
    "Linux-man-pages-copyleft": "VERBATIM (Linux man-pages copyleft notice)",
    "VERBATIM": "VERBATIM", "VERBATIM_ONE_PARA": "VERBATIM",
    "VERBATIM_TWO_PARA": "VERBATIM", "VERBATIM_PROF": "VERBATIM",
    "BSD-2-Clause": "BSD-2-Clause", "BSD-3-Clause": "BSD-3-Clause",
    "BSD-4-Clause-UC": "BSD-4-Clause-UC", "BSD_ONELINE_CDROM": "BSD (4.4BSD-Lite)",
    "MIT": "MIT", "PUBLIC_DOMAIN": "public domain",
    "PERMISSIVE_MISC": "permissive (misc)",
    "FREELY_REDISTRIBUTABLE": "freely redistributable",
}

# Fortune sets left out: offensive-leaning (ethnic, men-women, drugs), not
# prose (ascii-art, art), not English (translate-me), or quotations from
# works whose authors hold the copyright (pratchett, startrek, songs-poems,
# zippy).  The offensive "off/" sets come from fortunes-off, never installed.
FORTUNE_SKIP = {"art", "ascii-art", "drugs", "ethnic", "men-women", "pratchett",
                "songs-poems", "startrek", "translate-me", "zippy"}

FORTUNE_DIR = "/usr/share/games/fortunes"
MAN_ROOT = "/usr/share/man"
PY_DOC = "/usr/share/doc/python3.11-doc/html"
SQLITE_DOC = "/usr/share/doc/sqlite3"
PG_DOC = "/usr/share/doc/postgresql-doc-15/html"
FAQ_DOC = "/usr/share/doc/debian/FAQ"
DJANGO_DOC = "/usr/share/doc/python-django-doc/html"
FLASK_DOC = "/usr/share/doc/python-flask-doc/html"
ZSH_DOC = "/usr/share/doc/zsh-common/html"


def dedent(lines):
    ind = min((len(l) - len(l.lstrip(" ")) for l in lines if l.strip()), default=0)
    return [l[ind:] for l in lines]


# ---------------------------------------------------------------- fortunes

def fortune_docs():
    names = sorted(n for n in os.listdir(FORTUNE_DIR)
                   if "." not in n and os.path.isfile(os.path.join(FORTUNE_DIR, n)))
    for n in names:
        if n in FORTUNE_SKIP:
            continue
        with open(os.path.join(FORTUNE_DIR, n), encoding="utf-8", errors="replace") as f:
            data = norm_text(f.read())
        for i, chunk in enumerate(re.split(r"\n%\n", "\n" + data + "\n")):
            lines = [l.rstrip() for l in chunk.split("\n")]
            lines = dedent([l for l in lines if l.strip() != "%"])
            body = "\n".join(lines).strip("\n")
            if len(body) >= 20:
                yield ("fortunes", f"fortunes/{n}/{i}", [body], "BSD-3-Clause (fortune-mod)")


# ---------------------------------------------------------------- man pages

def man_licences(src):
    """man_licences lists every licence marker in a page's source: SPDX ids
    and the man-pages project's %%%LICENSE_START tags (a page assembled from
    several pieces can carry more than one)."""
    tags = re.findall(r"SPDX-License-Identifier:\s*([A-Za-z0-9.+-]+)", src)
    tags += re.findall(r"%%%LICENSE_START\(([A-Za-z0-9_.-]+)\)", src)
    return tags or ["UNKNOWN"]


def dep5_licences(path):
    """dep5_licences parses a machine-readable debian/copyright file into
    (file patterns, licence) pairs, in file order (the last match wins)."""
    stanzas, cur, key = [], {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                if cur:
                    stanzas.append(cur)
                cur, key = {}, None
                continue
            if line[0] in " \t" and key:
                cur[key] += " " + line.strip()
                continue
            key, _, v = line.partition(":")
            key = key.strip()
            cur[key] = v.strip()
    if cur:
        stanzas.append(cur)
    return [(s["Files"].split(), s["License"].strip()) for s in stanzas if "Files" in s]


def debian_says_gpl(stanzas, section_dir, name):
    """debian_says_gpl reports whether a stanza that names this page (not the
    catch-all "*", which Debian's file uses for pages it does not list)
    gives it a GPL licence.  Source paths use the page's own suffix as the
    folder (man3const/EOF.3const for the installed man3/EOF.3const)."""
    rels = [f"{section_dir}/{name}", f"man{name.rsplit('.', 1)[1]}/{name}"]
    lic = None
    for pats, l in stanzas:
        if pats != ["*"] and any(fnmatch.fnmatch(r, p) for r in rels for p in pats):
            lic = l
    return lic is not None and "GPL" in lic


def render_man(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    pipe = "preconv -e utf-8 | tbl | groff -man -Tutf8 -rLL=2000n -rHY=0 -rcR=1 -P-c -P-b -P-u -P-o"
    r = subprocess.run(["sh", "-c", pipe], input=raw, capture_output=True,
                       env=dict(os.environ, LC_ALL="C.UTF-8"))
    return r.stdout.decode("utf-8", errors="replace")


def man_docs(stats, source, packages, fixed_licence=None):
    """man_docs renders the man pages that packages installed.  With
    fixed_licence every page carries the package's licence; otherwise each
    page's own licence tag decides (MAN_OK)."""
    sects = sorted(d for d in os.listdir(MAN_ROOT) if re.fullmatch(r"man[0-9]", d))
    deb = []
    for pkg in packages:
        deb += dep5_licences(f"/usr/share/doc/{pkg}/copyright") if not fixed_licence else []
    for d in sects:
        for n in sorted(os.listdir(os.path.join(MAN_ROOT, d))):
            p = os.path.join(MAN_ROOT, d, n)
            if os.path.islink(p) or not n.endswith(".gz"):
                continue
            if dpkg_owner(p) not in packages:
                continue
            with gzip.open(p, "rt", encoding="utf-8", errors="replace") as f:
                src = f.read()
            if re.match(r"\s*\.so\s", src) and src.count("\n") < 4:
                continue
            if fixed_licence:
                licence = fixed_licence
            else:
                tags = man_licences(src)
                bad = [t for t in tags if t not in MAN_OK]
                if not bad and debian_says_gpl(deb, d, n[:-3]):
                    bad = ["GPL (debian/copyright)"]
                # Example programs inside otherwise verbatim pages can carry
                # their own GPL notice (clock_getres(2)'s clock_times.c).
                if not bad and re.search(r"General\s+Public\s+License|\bGPL\b", src):
                    bad = ["GPL (in the page)"]
                if bad:
                    stats.setdefault("man_rejected", {}).setdefault(bad[0], 0)
                    stats["man_rejected"][bad[0]] += 1
                    continue
                lic = tags[0]
                stats.setdefault("man_accepted", {}).setdefault(lic, 0)
                stats["man_accepted"][lic] += 1
                licence = " + ".join(sorted({MAN_OK[t] for t in tags}))
            text = norm_text(render_man(p))
            lines = text.split("\n")
            # Drop the page header and footer lines (name(section) ... name(section)).
            lines = [l for l in lines if not re.fullmatch(r"\S+\(\w+\)\s{3,}.*", l.strip())
                     and not re.fullmatch(r"(Linux man-pages|libcurl|curl) \S+\s{3,}.*", l.strip())]
            lines = [re.sub(r"(?<=[.!?:)])  (?=\S)", " ", l) for l in lines]
            body = "\n".join(dedent(lines))
            yield (source, f"{source}/{d}/{n}", paragraphs(body), licence)


_owner_cache = None


def dpkg_owner(path):
    """dpkg_owner names the package that installed path (None if none)."""
    global _owner_cache
    if _owner_cache is None:
        _owner_cache = {}
        for pkg in ("manpages", "manpages-dev", "libcurl4-doc"):
            r = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
            for l in r.stdout.split("\n"):
                _owner_cache[l] = pkg
    return _owner_cache.get(path)


# ---------------------------------------------------------------- HTML

def html_docs(source, root, licence, skip_re, main_re=None):
    files = []
    for dp, dns, fns in os.walk(root):
        dns.sort()
        for fn in fns:
            if fn.endswith(".html"):
                files.append(os.path.join(dp, fn))
    for p in sorted(files):
        rel = os.path.relpath(p, root)
        if skip_re and re.search(skip_re, rel):
            continue
        with open(p, encoding="utf-8", errors="replace") as f:
            src = f.read()
        if re.search(r'http-equiv="Refresh"', src, re.I):
            continue  # a redirect stub
        if main_re:
            m = re.search(main_re, src, re.S)
            if m:
                src = m.group(1)
        yield (source, f"{source}/{rel}", html_to_text(src), licence)


def all_docs(stats):
    yield from fortune_docs()
    yield from html_docs("debian-faq", FAQ_DOC, "SPI verbatim-copying notice", r"^index|faqinfo")
    yield from man_docs(stats, "man-pages", ("manpages", "manpages-dev"))
    yield from man_docs(stats, "curl-docs", ("libcurl4-doc",), "curl (MIT-style)")
    yield from html_docs("python-docs", PY_DOC, "PSF-2.0",
                         r"^(genindex|py-modindex|search|_|whatsnew/changelog|download|bugs|copyright|license)",
                         r'<div class="body" role="main">(.*?)<div class="sphinxsidebar"')
    yield from html_docs("sqlite-docs", SQLITE_DOC, "public domain",
                         r"^(releaselog|changes|chronology|doclist|sitemap|keyword_index|fileformat\.html|copyright|mingw|src/)",
                         None)
    yield from html_docs("postgresql-docs", PG_DOC, "PostgreSQL",
                         r"^(release|bookindex|appendix-obsolete|index)", None)
    yield from html_docs("django-docs", DJANGO_DOC, "BSD-3-Clause",
                         r"^(_|genindex|py-modindex|search|releases/|internals/deprecation|contents)",
                         r'<div class="body" role="main">(.*?)<div class="sphinxsidebar"')
    yield from html_docs("flask-docs", FLASK_DOC, "BSD-3-Clause",
                         r"^(_|genindex|py-modindex|search|changes|license|404)",
                         r'<div class="body" role="main">(.*?)<div class="sphinxsidebar"')
    yield from html_docs("zsh-docs", ZSH_DOC, "Zsh (MIT-style)",
                         r"^(index|zsh_(abt|toc|ovr)|Concept-Index|Variables-Index|Options-Index|Functions-Index|Editor-Functions-Index|Style-and-Tag-Index|The-Z-Shell-Manual)",
                         None)


# ---------------------------------------------------------------- cleaning and dedup

def keep_para(p, source):
    letters = sum(c.isalpha() for c in p)
    if source == "fortunes":
        return letters >= 10
    if len(p) < 4 or re.fullmatch(r"[\w-]+:", p):
        return False  # fragments and syntax-diagram labels
    if re.search(r"\[ ?(<<|>>|Top|Contents|Index) ?\]", p):
        return False  # texinfo navigation panels
    if letters / max(1, len(p)) < 0.25 and len(p) > 40:
        return False  # tables of numbers, punctuation art
    return True


def exact_key(p):
    s = re.sub(r"\s+", " ", p.lower()).strip()
    return hashlib.blake2b(s.encode("utf-8"), digest_size=12).digest()


class MinHashLSH:
    """MinHashLSH flags a paragraph whose 5-word shingle set is near (Jaccard
    about 0.8 or more) to one seen before.  NPERM permutations in BANDS bands."""

    NPERM, BANDS = 16, 8

    def __init__(self, seed):
        rnd = random.Random(seed)
        self.masks = [rnd.getrandbits(64) for _ in range(self.NPERM)]
        self.tables = [set() for _ in range(self.BANDS)]

    def signature(self, p):
        words = re.findall(r"\w+", p.lower())
        if len(words) < 12:
            return None
        hs = {int.from_bytes(hashlib.blake2b(" ".join(words[i:i + 5]).encode(), digest_size=8).digest(), "little")
              for i in range(len(words) - 4)}
        return tuple(min(h ^ m for h in hs) for m in self.masks)

    def seen(self, p):
        sig = self.signature(p)
        if sig is None:
            return False
        r = self.NPERM // self.BANDS
        keys = [sig[b * r:(b + 1) * r] for b in range(self.BANDS)]
        dup = any(k in t for k, t in zip(keys, self.tables))
        if not dup:
            for k, t in zip(keys, self.tables):
                t.add(k)
        return dup


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=".cache/starter/data")
    ap.add_argument("--seed", type=int, default=20251129)
    ap.add_argument("--valid-frac", type=float, default=0.02)
    ap.add_argument("--max-mb", type=float, default=40.0, help="cap on train+valid size")
    args = ap.parse_args()

    stats = {"seed": args.seed, "sources": {}}
    seen_exact = set()
    lsh = MinHashLSH(args.seed)
    docs = []
    for source, doc_id, paras, licence in all_docs(stats):
        s = stats["sources"].setdefault(source, {"docs": 0, "paras_in": 0, "paras_kept": 0,
                                                  "exact_dup": 0, "near_dup": 0, "filtered": 0,
                                                  "chars": 0, "licences": {}})
        s["licences"][licence] = s["licences"].get(licence, 0) + 1
        kept = []
        for p in paras:
            s["paras_in"] += 1
            if not keep_para(p, source):
                s["filtered"] += 1
                continue
            # Short paragraphs (headings such as "DESCRIPTION") repeat by
            # design; exact dedup applies from 40 characters, and to every fortune.
            if len(p) >= 40 or source == "fortunes":
                k = exact_key(p)
                if k in seen_exact:
                    s["exact_dup"] += 1
                    continue
                seen_exact.add(k)
            if lsh.seen(p):
                s["near_dup"] += 1
                continue
            kept.append(p)
        text = "\n\n".join(kept).strip()
        if len(text) < 20 or DOC_SEP in text:
            continue
        s["docs"] += 1
        s["paras_kept"] += len(kept)
        s["chars"] += len(text)
        docs.append((doc_id, text))
        if len(docs) % 2000 == 0:
            print(f"{len(docs)} documents ...", file=sys.stderr)

    # Split by document (a keyed hash, so the split does not depend on order).
    train, valid = [], []
    for doc_id, text in docs:
        h = hashlib.blake2b(f"{args.seed}:{doc_id}".encode(), digest_size=8).digest()
        (valid if int.from_bytes(h, "little") / 2**64 < args.valid_frac else train).append(text)
    rnd = random.Random(args.seed)
    rnd.shuffle(train)
    rnd.shuffle(valid)

    cap = int(args.max_mb * 1e6)
    total = sum(len(t.encode()) + len(DOC_SEP) + 2 for t in train + valid)
    if total > cap:
        # Trim train from the end of the shuffled order: a uniform cut over sources.
        while train and total > cap:
            t = train.pop()
            total -= len(t.encode()) + len(DOC_SEP) + 2
        stats["trimmed_to_cap"] = True

    os.makedirs(args.out, exist_ok=True)
    for name, part in (("train.txt", train), ("valid.txt", valid)):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            for t in part:
                f.write(t + "\n" + DOC_SEP + "\n")
    stats["train_docs"], stats["valid_docs"] = len(train), len(valid)
    stats["train_bytes"] = os.path.getsize(os.path.join(args.out, "train.txt"))
    stats["valid_bytes"] = os.path.getsize(os.path.join(args.out, "valid.txt"))
    stats["packages"] = package_versions()
    with open(os.path.join(args.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    write_notice(os.path.join(args.out, "NOTICE"), stats)
    print(json.dumps({k: v for k, v in stats.items() if k != "sources"}, indent=1))
    for k, v in stats["sources"].items():
        print(k, {kk: vv for kk, vv in v.items() if kk != "licences"})


NOTICE_PACKAGES = ["fortunes", "debian-faq", "manpages", "python3.11-doc", "sqlite3-doc",
                   "postgresql-doc-15", "libcurl4-doc", "python-django-doc", "python-flask-doc", "zsh-common"]


def write_notice(path, stats):
    """write_notice writes the notice that ships beside the weights: what the
    model was trained on, and each source package's copyright file verbatim."""
    lines = [
        "Hearth starter model (hearth/starter): training-data notice",
        "",
        "The starter model's weights were trained on English text from the Debian",
        "packages below (and on a question-answer set written by the Hearth project).",
        "Whether trained weights are a derived work of their training text is unsettled;",
        "Hearth ships these notices with the weights in case they are.  Only sources",
        "under permissive or verbatim-copying terms were used; GPL-licensed pages and",
        "documents were left out.  Man pages were taken one by one by their own licence",
        "markers; the lists of accepted and rejected markers are in docs/starter-model.md.",
        "",
        "Packages (Debian 12 versions):",
    ]
    for pkg, ver in sorted(stats["packages"].items()):
        lines.append(f"  {pkg} {ver}")
    for pkg in NOTICE_PACKAGES:
        p = f"/usr/share/doc/{pkg}/copyright"
        lines += ["", "=" * 78, f"{pkg}: {p}", "=" * 78, ""]
        with open(p, encoding="utf-8", errors="replace") as f:
            lines.append(f.read().rstrip())
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def package_versions():
    pk = ["fortunes", "fortunes-min", "debian-faq", "manpages", "manpages-dev",
          "python3.11-doc", "sqlite3-doc", "postgresql-doc-15", "libcurl4-doc",
          "python-django-doc", "python-flask-doc", "zsh-doc", "zsh-common", "groff-base"]
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\n"] + pk,
                       capture_output=True, text=True)
    return dict(l.split(" ", 1) for l in r.stdout.strip().split("\n") if l)


if __name__ == "__main__":
    main()
