#!/usr/bin/env python3
"""eval_dialogue.py scores the starter model on the held-out dialogue set
(starter_heldout.jsonl) through Hearth's own server, the path users hit.

It starts `hearth serve` on a loopback port (or talks to --url), and for
each prompt asks POST /v1/chat/completions once greedily (temperature 0)
and once per seed with only `seed` and `max_tokens` set, so the server fills
temperature, top_p, top_k and repetition_penalty from the model's own
generation_config.json, as it does for any client that sends none.  Each
reply is acceptable when it ended by itself (finish_reason "stop"), is not
empty, contains one keyword of every `must` group, none of `must_not`, does
not begin with a word of `must_not_start`, and repeats under a quarter of its
word 4-grams.  Keywords match case-insensitively, at word boundaries where
the keyword begins or ends with a letter or digit.

    go build -o /tmp/hearth ./app
    python3 tools/starter/eval_dialogue.py --bin /tmp/hearth --out /tmp/eval-new.json
    python3 tools/starter/eval_dialogue.py --bin /tmp/hearth --model DIR --out ...

Standard library only.  --check only verifies that no held-out prompt is in
the training data (after lower-casing and dropping punctuation).
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import starter_common as sc  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", help="hearth binary to serve with (default: go build ./app)")
    ap.add_argument("--model", help="serve this model directory instead of the built-in starter")
    ap.add_argument("--url", help="use a running server instead of starting one")
    ap.add_argument("--model-id", default="hearth/starter")
    ap.add_argument("--set", default=os.path.join(HERE, "starter_heldout.jsonl"))
    ap.add_argument("--seeds", type=int, default=8, help="sampled replies per prompt (seeds 1..N)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gen-config", default=os.path.join(HERE, "..", "..", "assets", "starter", "generation_config.json"),
                    help="the model's generation_config.json (recorded in the output, and its max_new_tokens sent)")
    ap.add_argument("--out", help="write every reply and the scores here (JSON)")
    ap.add_argument("--label", default="")
    ap.add_argument("--check", action="store_true", help="only check the set against the training data")
    return ap.parse_args()


def load_set(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                r = json.loads(line)
                for k in ("id", "category", "prompt"):
                    if not r.get(k):
                        raise SystemExit(f"{path}:{n}: {k} missing")
                rows.append(r)
    return rows


def kw_re(k):
    k = k.lower()
    pre = r"(?<![a-z0-9])" if k[0].isalnum() else ""
    post = r"(?![a-z0-9])" if k[-1].isalnum() else ""
    return re.compile(pre + re.escape(k) + post)


def judge(row, text, finish):
    """judge returns the reasons a reply is not acceptable ([] = acceptable)."""
    low = text.lower()
    why = []
    if finish != "stop":
        why.append(f"finish {finish}")
    if not text.strip():
        why.append("empty")
    for group in row.get("must", []):
        if not any(kw_re(k).search(low) for k in group):
            why.append("lacks " + "|".join(group))
    for k in row.get("must_not", []):
        if kw_re(k).search(low):
            why.append(f"has {k!r}")
    first = re.findall(r"[a-z0-9']+", low)[:1]
    for k in row.get("must_not_start", []):
        if first and first[0] == k.lower():
            why.append(f"starts with {k!r}")
    if sc.repetition_ratio(text) >= 0.25:
        why.append("repeats")
    return why


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def post(url, body, timeout=300):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)


def start_server(a, tmp):
    binary = a.bin
    if not binary:
        binary = os.path.join(tmp, "hearth")
        subprocess.run(["go", "build", "-o", binary, "./app"], check=True, cwd=os.path.join(HERE, "..", ".."))
    port = free_port()
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"), HF_HUB_CACHE=os.path.join(tmp, "hub"),
               HF_HOME=os.path.join(tmp, "hf"))
    os.makedirs(env["HF_HUB_CACHE"], exist_ok=True)
    cmd = [binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--threads", str(a.threads),
           "--backend", "cpu", "--quiet"]
    if a.model:
        cmd += ["--model", a.model]
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit("hearth serve exited:\n" + open(os.path.join(tmp, "serve.log")).read())
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return proc, url
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("hearth serve did not come up")


def check_overlap(rows):
    seen = sc.training_questions()
    bad = [r["id"] for r in rows if r.get("held_out", True) and sc.norm_q(r["prompt"]) in seen]
    return bad


def main():
    a = parse_args()
    rows = load_set(a.set)
    bad = check_overlap(rows)
    if bad:
        raise SystemExit(f"held-out prompts found in the training data: {bad}")
    if a.check:
        print(f"{len(rows)} prompts, {sum(r.get('held_out', True) for r in rows)} held out; none in the training data")
        return
    with open(a.gen_config) as f:
        gc = json.load(f)
    max_tokens = int(gc.get("max_new_tokens", 256))
    tmp = tempfile.mkdtemp(prefix="starter-eval-")
    proc = None
    try:
        if a.url:
            url = a.url
        else:
            proc, url = start_server(a, tmp)
        t0 = time.time()
        results = []
        ntok = 0
        for i, r in enumerate(rows):
            msgs = [{"role": "user", "content": r["prompt"]}]
            rec = {"id": r["id"], "category": r["category"], "prompt": r["prompt"], "held_out": r.get("held_out", True),
                   "samples": []}
            for seed in [None] + list(range(1, a.seeds + 1)):
                body = {"messages": msgs, "max_tokens": max_tokens}
                if a.model_id and not a.model:
                    body["model"] = a.model_id  # with --model the server's default model answers
                if seed is None:
                    body.update(temperature=0, seed=0)
                else:
                    body["seed"] = seed
                resp = post(url, body)
                ch = resp["choices"][0]
                text = ch["message"].get("content") or ""
                ntok += resp.get("usage", {}).get("completion_tokens", 0)
                why = judge(r, text, ch.get("finish_reason"))
                s = {"seed": seed, "text": text, "finish": ch.get("finish_reason"), "ok": not why, "why": why}
                if seed is None:
                    rec["greedy"] = s
                else:
                    rec["samples"].append(s)
            rec["sample_ok"] = sum(s["ok"] for s in rec["samples"]) / max(1, len(rec["samples"]))
            rec["greedy_ok"] = rec["greedy"]["ok"]
            results.append(rec)
            print(f"[{i + 1}/{len(rows)}] {r['id']}: sampled {rec['sample_ok']:.2f}, greedy {'ok' if rec['greedy_ok'] else 'FAIL'}"
                  f" | {rec['greedy']['text'][:100]!r}", flush=True)
        secs = time.time() - t0
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)

    summary = summarize(results)
    out = {"label": a.label, "model": a.model or "built-in hearth/starter", "binary": a.bin, "seeds": a.seeds,
           "defaults": {k: gc.get(k) for k in ("temperature", "top_p", "top_k", "repetition_penalty", "max_new_tokens")},
           "seconds": round(secs, 1), "completion_tokens": ntok, "summary": summary, "results": results}
    print_summary(summary)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1, ensure_ascii=False)


def summarize(results):
    cats = {}
    for r in results:
        key = r["category"] if r["held_out"] else r["category"] + " (trained)"
        cats.setdefault(key, []).append(r)
    held = [r for r in results if r["held_out"]]
    cats["all held out"] = held
    out = {}
    for k, rs in cats.items():
        out[k] = {"prompts": len(rs),
                  "sampled_ok": round(sum(r["sample_ok"] for r in rs) / max(1, len(rs)), 3),
                  "greedy_ok": sum(r["greedy_ok"] for r in rs),
                  "majority_ok": sum(r["sample_ok"] >= 0.5 for r in rs)}
    return out


def print_summary(summary):
    print("\n| set | prompts | sampled acceptable | greedy acceptable | prompts with ≥ half the samples acceptable |")
    print("|---|---|---|---|---|")
    for k, v in summary.items():
        print(f"| {k} | {v['prompts']} | {v['sampled_ok']:.2f} | {v['greedy_ok']}/{v['prompts']} | "
              f"{v['majority_ok']}/{v['prompts']} |")


if __name__ == "__main__":
    main()
