#!/bin/bash
# Runs the GPU backend's benchmark and tests on the device machine (an
# NVIDIA H200 through Vulkan), the way docs/benchmarks.md records them.
#
# Here, first:
#   go test -c -ldflags='-s -w' -o /tmp/gpu.test ./engine/backend/gpu/
#   xz -9e -c /tmp/gpu.test >.gpubin/gpu.test.xz   (4.4 MB: the tree and
#   what is carried must stay under 64 MiB; not -trimpath, which hides
#   testdata from TestManifest)
#   (and the Vulkan loader debs in .gl/: see /work/.library/device/README.md)
# Then on the device machine, with carry [".gl", ".gpubin"]:
#   bash tools/gpubench/run.sh NAME SHAPES TESTS
# NAME prefixes the logs written to $OUT; SHAPES is -gpubench.shapes (e.g.
# "2x16,c8x256,c4x128": rows×lanes row kernels, cRxT column kernels);
# TESTS is the -test.run regexp run afterwards on the same GPU (e.g.
# 'Conformance|Fusions|LargeShapes|Manifest'). BT and TT override the
# benchmark's and the tests' time limits in seconds.
set -o pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TMPDIR=/dev/shm
B=$PWD/.gpubin/gpu.test
if [ -f "$B.xz" ]; then
	B=/dev/shm/gpu.test
	xz -dc .gpubin/gpu.test.xz >"$B" 2>/dev/null ||
		python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' .gpubin/gpu.test.xz "$B"
	chmod +x "$B"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv >"$OUT/$1-smi.txt" 2>&1
cd engine/backend/gpu || exit 1
t0=$(date +%s)
timeout "${BT:-400}" "$B" -test.run '^$' -test.bench Llama -test.benchtime 32x -gpubench.shapes="$2" 2>&1 | grep -v XDG_RUNTIME | tee "$OUT/$1-bench.log"
echo "bench took $(($(date +%s) - t0)) s" | tee -a "$OUT/$1-bench.log"
t0=$(date +%s)
timeout "${TT:-150}" "$B" -test.run "$3" -test.v 2>&1 | grep -v XDG_RUNTIME >"$OUT/$1-test.log"
echo "tests rc=$? took $(($(date +%s) - t0)) s" | tee -a "$OUT/$1-test.log"
grep -E "^(--- FAIL|FAIL|ok|PASS)|_test.go" "$OUT/$1-test.log" | head -40
