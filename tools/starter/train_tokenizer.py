#!/usr/bin/env python3
"""train_tokenizer.py trains the starter model's byte-level BPE tokenizer.

It reads the corpus written by build_corpus.py plus the Hearth Q&A set and
system prompt (so Hearth's own words get tokens), and writes OUT/tokenizer.json:
a GPT-2/Llama-3 style byte-level BPE (the Llama 3 split regex, then ByteLevel
without its own regex), no normalizer, special tokens at ids 0-4.  Needs the
`tokenizers` package (run it on the device machine).

    python3 tools/starter/train_tokenizer.py --data .cache/starter/data --out OUT
"""

import argparse
import json
import os
import sys
import time

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]
DOC_SEP = "\n<|end_of_text|>\n"
# The Llama 3 pre-tokenizer split (GPT-4 style): contractions, words with one
# leading non-letter, numbers of at most 3 digits, punctuation runs, newlines,
# other whitespace.
SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def new_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def texts(data_dir, qa_path, qa_repeat):
    with open(os.path.join(data_dir, "train.txt"), encoding="utf-8") as f:
        for doc in f.read().split(DOC_SEP):
            if doc.strip():
                yield doc
    with open(os.path.join(HERE, "system_prompt.txt"), encoding="utf-8") as f:
        sp = f.read().strip()
    qa = [json.loads(l) for l in open(qa_path, encoding="utf-8") if l.strip()]
    for _ in range(qa_repeat):
        yield sp
        for p in qa:
            yield "\n".join([p["q"]] + p.get("paraphrases", []) + [p["a"]])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=".cache/starter/data")
    ap.add_argument("--qa", default=os.path.join(HERE, "hearth_qa.jsonl"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--qa-repeat", type=int, default=20,
                    help="copies of the Q&A text in the tokenizer's training text")
    args = ap.parse_args()

    t0 = time.time()
    tok = new_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=args.vocab, min_frequency=2, special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts(args.data, args.qa, args.qa_repeat), trainer=trainer)
    for i, t in enumerate(SPECIALS):
        if tok.token_to_id(t) != i:
            sys.exit(f"special token {t!r} has id {tok.token_to_id(t)}, want {i}")
    probes = ["Hello, world!  Tabs\tand\nnewlines\r\n", "hearth pull mlx-community/Qwen3-1.7B-4bit",
              "http://127.0.0.1:11435/v1/chat/completions", "naïve café 東京 🙂 12345",
              "<|im_start|>user\nHi<|im_end|>\n"]
    for s in probes:
        ids = tok.encode(s).ids
        back = tok.decode(ids, skip_special_tokens=False)
        if back != s:
            sys.exit(f"round trip failed: {s!r} -> {back!r}")
    os.makedirs(args.out, exist_ok=True)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    enc = tok.encode("Run `hearth pull org/name` to download a model from Hugging Face.")
    print(f"tokenizer: vocab {tok.get_vocab_size()} in {time.time() - t0:.1f}s; sample {enc.tokens}")


if __name__ == "__main__":
    main()
