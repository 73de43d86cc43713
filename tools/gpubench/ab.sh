#!/bin/bash
# A/B-measures `hearth bench --backend gpu` for two builds on the device
# machine, runs alternated in one lease (machines differ between leases by
# up to 30 %, so only runs of one lease compare).
#
# Here:
#   bash tools/gpubench/ab.sh build [BASE]
# builds the working tree (new) and BASE (old; default HEAD, checked out in
# a temporary worktree) with -tags nostarter (no embedded starter model:
# the tree plus what is carried must stay under 64 MiB), stripped and
# xz-compressed into .gpubin/ (about 6.4 MB each; with a stripped gpu.test,
# 4.4 MB, all three fit beside the tree). The Vulkan loader debs must be
# in .gl/ (docs/benchmarks.md).
#
# There, with carry [".gl", ".gpubin"]:
#   bash tools/gpubench/ab.sh run [ROUNDS] [SHAPES] [FLAGS]
# runs old then new ROUNDS times (default 2) for each synthetic shape
# (default "llama-3.1-8b llama-3.2-1b") with FLAGS added to the bench
# (default --profile), writing $OUT/SHAPE-BUILD-ROUND.txt and printing each
# run's decode line.
set -o pipefail

# unxz SRC DST decompresses with xz, or Python's lzma where xz is missing.
unxz() {
	xz -dc "$1" >"$2" 2>/dev/null ||
		python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
}

case "$1" in
build)
	base=${2:-HEAD}
	mkdir -p .gpubin
	go build -tags nostarter -trimpath -ldflags='-s -w' -o /tmp/hearth-new ./app || exit 1
	wt=$(mktemp -d)
	git worktree add -q --detach "$wt" "$base" || exit 1
	(cd "$wt" && go build -tags nostarter -trimpath -ldflags='-s -w' -o /tmp/hearth-old ./app)
	rc=$?
	git worktree remove --force "$wt"
	[ $rc -eq 0 ] || exit $rc
	xz -9e -T2 -c /tmp/hearth-new >.gpubin/new.xz && xz -9e -T2 -c /tmp/hearth-old >.gpubin/old.xz
	ls -l .gpubin
	;;
run)
	rounds=${2:-2}
	shapes=${3:-llama-3.1-8b llama-3.2-1b}
	flags=${4:---profile}
	for f in .gl/*.deb; do dpkg -x "$f" /; done
	ldconfig
	export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TMPDIR=/dev/shm
	for b in old new; do
		unxz .gpubin/$b.xz /dev/shm/hearth-$b && chmod +x /dev/shm/hearth-$b || exit 1
	done
	nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv >"$OUT/smi.txt" 2>&1
	for s in $shapes; do
		for i in $(seq "$rounds"); do
			for b in old new; do
				out="$OUT/$s-$b-$i.txt"
				# shellcheck disable=SC2086 # flags are words
				timeout 150 /dev/shm/hearth-$b bench --synthetic "$s" --quant q4g64 --backend gpu --prompts 512 \
					--decode 128 --repeats 3 --cache /dev/shm/syn $flags >"$out" 2>/dev/null
				echo "$s $b $i: $(grep -E '^decode' "$out")"
			done
		done
	done
	;;
*)
	echo "usage: $0 build [BASE] | run [ROUNDS] [SHAPES] [FLAGS]" >&2
	exit 2
	;;
esac
