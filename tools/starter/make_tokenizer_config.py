#!/usr/bin/env python3
"""make_tokenizer_config.py writes tokenizer_config.json for the starter model.

The chat template is ChatML (<|im_start|>role\\n...<|im_end|>\\n) after the BOS
token; when the conversation has no system message, the template inserts the
Hearth guide from system_prompt.txt, so any client gets the grounded prompt.
Run it after editing system_prompt.txt:

    python3 tools/starter/make_tokenizer_config.py
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]


def chat_template(system_prompt):
    if '"' in system_prompt or "\\" in system_prompt or "\n" in system_prompt:
        raise SystemExit("system prompt must be one line without double quotes or backslashes")
    return (
        "{{- bos_token }}\n"
        "{%- if messages and messages[0]['role'] == 'system' %}\n"
        "{%- set system_message = messages[0]['content'] %}\n"
        "{%- set loop_messages = messages[1:] %}\n"
        "{%- else %}\n"
        '{%- set system_message = "' + system_prompt + '" %}\n'
        "{%- set loop_messages = messages %}\n"
        "{%- endif %}\n"
        "{{- '<|im_start|>system\\n' + system_message + '<|im_end|>\\n' }}\n"
        "{%- for message in loop_messages %}\n"
        "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}\n"
        "{%- endfor %}\n"
        "{%- if add_generation_prompt %}\n"
        "{{- '<|im_start|>assistant\\n' }}\n"
        "{%- endif %}\n"
    )


def main():
    with open(os.path.join(HERE, "system_prompt.txt"), encoding="utf-8") as f:
        system_prompt = f.read().strip()
    added = {
        str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                 "single_word": False, "special": True}
        for i, t in enumerate(SPECIALS)
    }
    cfg = {
        "added_tokens_decoder": added,
        "add_bos_token": False,
        "add_eos_token": False,
        "bos_token": "<|begin_of_text|>",
        "eos_token": "<|im_end|>",
        "pad_token": "<|pad|>",
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 2048,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": chat_template(system_prompt),
    }
    with open(os.path.join(HERE, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
