"""starter_common holds the pieces of the starter-model recipe that need no
GPU: the chat template rendering, the Q&A set, chat token streams with loss
masks, and the answer-overlap scores.  Standard library plus jinja2."""

import json
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
BOS, EOT, IM_START, IM_END, PAD = range(5)
DOC_SEP = "\n<|end_of_text|>\n"

# Other system prompts seen in training, so that a user's own system prompt
# (the web chat has a field for it) does not throw the model off.
ALT_SYSTEM = [
    "You are a helpful assistant.",
    "You are a helpful assistant. Answer briefly.",
    "You are Hearth's built-in assistant.",
]


def load_system_prompt():
    with open(os.path.join(HERE, "system_prompt.txt"), encoding="utf-8") as f:
        return f.read().strip()


def load_template(path=None):
    """load_template returns a callable rendering the tokenizer_config.json
    chat template the way transformers does (sandboxed Jinja2, trim_blocks,
    lstrip_blocks)."""
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    with open(path or os.path.join(HERE, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    tmpl = env.from_string(cfg["chat_template"])

    def render(messages, add_generation_prompt=False):
        return tmpl.render(messages=messages, add_generation_prompt=add_generation_prompt,
                           bos_token=cfg["bos_token"], eos_token=cfg["eos_token"])
    return render


def load_qa(path=None):
    """load_qa reads hearth_qa.jsonl and checks each record's shape."""
    out = []
    with open(path or os.path.join(HERE, "hearth_qa.jsonl"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            for k in ("id", "q", "a", "split"):
                if not isinstance(r.get(k), str) or not r[k].strip():
                    raise ValueError(f"hearth_qa.jsonl line {n}: field {k!r} missing")
            if r["split"] not in ("train", "eval"):
                raise ValueError(f"hearth_qa.jsonl line {n}: split {r['split']!r}")
            r.setdefault("paraphrases", [])
            out.append(r)
    return out


def load_dialogues(path=None, qa=None):
    """load_dialogues reads hearth_dialogue.jsonl: hand-written multi-turn
    chats, each {"id", "turns": [{"user": ..., "a": ...} or {"user": ...,
    "ref": PAIR_ID}, ...]}.  A turn with "ref" takes its answer from that
    Q&A pair, so a dialogue says the same as the single-turn pair.  Returns
    lists of (question, answer) turns."""
    path = path or os.path.join(HERE, "hearth_dialogue.jsonl")
    if not os.path.exists(path):
        return []
    by_id = {p["id"]: p for p in (qa if qa is not None else load_qa())}
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            r = json.loads(line)
            turns = []
            for t in r.get("turns", []):
                q = t.get("user")
                a = t.get("a") if "a" in t else by_id.get(t.get("ref"), {}).get("a")
                if not isinstance(q, str) or not q.strip() or not isinstance(a, str) or not a.strip():
                    raise ValueError(f"hearth_dialogue.jsonl line {n}: turn {t!r} needs user and a (or a known ref)")
                turns.append((q, a))
            if len(turns) < 2:
                raise ValueError(f"hearth_dialogue.jsonl line {n}: a dialogue has two turns or more")
            out.append({"id": r["id"], "turns": turns})
    return out


def norm_q(s):
    """norm_q is the form prompts are compared in (held-out check): lower
    case, letters, digits and spaces only."""
    return " ".join(re.findall(r"[a-z0-9]+", s.lower().replace("'", "")))


def training_questions(qa=None, dialogues=None):
    """training_questions is the set of every user turn the training can
    see (all Q&A questions and paraphrases, held-out pairs included, and
    every dialogue turn), normalized with norm_q."""
    qa = qa if qa is not None else load_qa()
    dialogues = dialogues if dialogues is not None else load_dialogues(qa=qa)
    seen = set()
    for p in qa:
        for q in [p["q"]] + p["paraphrases"]:
            seen.add(norm_q(q))
    for d in dialogues:
        for q, _ in d["turns"]:
            seen.add(norm_q(q))
    return seen


def load_heldout(path=None):
    path = path or os.path.join(HERE, "starter_heldout.jsonl")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def check_heldout(qa, dialogues, path=None):
    """check_heldout fails when a held-out evaluation prompt is among the
    training questions."""
    seen = training_questions(qa, dialogues)
    bad = [r["prompt"] for r in load_heldout(path) if r.get("held_out", True) and norm_q(r["prompt"]) in seen]
    if bad:
        raise SystemExit(f"held-out evaluation prompts are in the training data: {bad}")


def vary(q, rnd, p=0.15):
    """vary returns q, or (with probability p each) q lower-cased and q
    without its final punctuation: people type "how do i pull a model" as
    often as the written form."""
    if rnd.random() < p:
        q = q.lower()
    if rnd.random() < p:
        q = q.rstrip("?!.") or q
    return q


def chat_ids(encode, system, turns):
    """chat_ids tokenizes one conversation piece by piece, mirroring the chat
    template, and returns (ids, mask) where mask is 1 on the tokens the model
    is trained to produce: each assistant answer and its <|im_end|>.
    encode maps text to ids (special tokens recognised, nothing added)."""
    ids, mask = [BOS], [0]

    def put(text, m):
        t = encode(text)
        ids.extend(t)
        mask.extend([m] * len(t))

    put(f"<|im_start|>system\n{system}<|im_end|>\n", 0)
    for q, a in turns:
        put(f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n", 0)
        put(f"{a}<|im_end|>", 1)
        put("\n", 0)
    return ids, mask


def build_chats(qa, encode, system_prompt, rnd, multi_turn=0.25, alt_system=0.2, include_eval=False,
                dialogues=(), vary_p=0.0):
    """build_chats turns the training pairs (all pairs with include_eval)
    into conversations: every question and paraphrase once, mostly under the
    Hearth guide, some under another system prompt, some followed by a second
    turn; then every hand-written dialogue once.  With vary_p, user turns
    are sometimes lower-cased or lose their final punctuation (vary)."""
    pairs = [p for p in qa if include_eval or p["split"] == "train"]
    chats = []
    for p in pairs:
        for q in [p["q"]] + p["paraphrases"]:
            turns = [(vary(q, rnd, vary_p), p["a"])]
            if rnd.random() < multi_turn:
                o = rnd.choice(pairs)
                turns.append((vary(rnd.choice([o["q"]] + o["paraphrases"]), rnd, vary_p), o["a"]))
            system = rnd.choice(ALT_SYSTEM) if rnd.random() < alt_system else system_prompt
            chats.append((system, turns))
    for d in dialogues:
        turns = [(vary(q, rnd, vary_p), a) for q, a in d["turns"]]
        system = rnd.choice(ALT_SYSTEM) if rnd.random() < alt_system else system_prompt
        chats.append((system, turns))
    return [chat_ids(encode, s, t) for s, t in chats]


def check_chat_ids(encode, render, system, turns):
    """check_chat_ids returns True when piecewise tokenization equals the
    tokenization of the rendered template (so the masks line up)."""
    msgs = [{"role": "system", "content": system}]
    for q, a in turns:
        msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    ids, _ = chat_ids(encode, system, turns)
    return ids == encode(render(msgs))


def words(s):
    return re.findall(r"[a-z0-9]+", s.lower())


def token_f1(pred, ref):
    p, r = words(pred), words(ref)
    if not p or not r:
        return float(p == r)
    common = {}
    for w in r:
        common[w] = common.get(w, 0) + 1
    hit = 0
    for w in p:
        if common.get(w, 0) > 0:
            hit += 1
            common[w] -= 1
    if hit == 0:
        return 0.0
    prec, rec = hit / len(p), hit / len(r)
    return 2 * prec * rec / (prec + rec)


def rouge_l(pred, ref):
    p, r = words(pred), words(ref)
    if not p or not r:
        return float(p == r)
    prev = [0] * (len(r) + 1)
    for a in p:
        cur = [0]
        for j, b in enumerate(r):
            cur.append(prev[j] + 1 if a == b else max(prev[j + 1], cur[j]))
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    prec, rec = lcs / len(p), lcs / len(r)
    return 2 * prec * rec / (prec + rec)


def repetition_ratio(s, n=4):
    """repetition_ratio is the share of repeated word 4-grams in s (0 = none)."""
    w = words(s)
    grams = [tuple(w[i:i + n]) for i in range(len(w) - n + 1)]
    if not grams:
        return 0.0
    return 1 - len(set(grams)) / len(grams)


if __name__ == "__main__":
    # Self-check without a tokenizer: character-level "encode" for specials.
    qa = load_qa()
    render = load_template()
    sp = load_system_prompt()
    assert sp in render([{"role": "user", "content": "x"}], True)
    print(len(qa), "pairs;", sum(p["split"] == "eval" for p in qa), "held out")
    print("f1", token_f1("Run hearth ls.", "Run `hearth ls`."), "rougeL", rouge_l("a b c d", "a c d e"))
    assert random.Random(1).random() == random.Random(1).random()
