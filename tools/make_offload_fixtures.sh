#!/usr/bin/env bash
# Regenerate tests/fixtures/offload/: REAL fat binaries with clang offload bundles, built on
# Debian bookworm with hipcc (clang-15, ROCm 5.2) and clang-19, for the bundle inspector tests.
#
# Usage: tools/make_offload_fixtures.sh [OUTPUT_DIR]
#   default OUTPUT_DIR: <repo>/tests/fixtures/offload
#
# Writes (all stripped):
#   hipcc-gfx906        hipcc, one target (gfx906)
#   hipcc-multi         hipcc, gfx906, gfx90a:xnack-, gfx1030, gfx1100
#   mini-seed003        clang-19, three translation units: two for the nine targets of seed 003,
#                       one for gfx906 alone (seed 003 in miniature)
#   libplain.so         clang-19 shared library: feature suffixes and a generic target
#   libcompressed.so    the same with --offload-compress (a zstd CCOB bundle)
# and, for each, NAME.list.txt: the bundle offsets inside the file and what
# clang-offload-bundler --list printed for each bundle of the extracted .hip_fatbin, plus
# NAME.grep.txt: `grep -a -c __CLANG_OFFLOAD_BUNDLE__` and the `grep -a -o | uniq -c` counts.
#
# The kernels avoid the device libraries (Debian's lack gfx11/gfx12 bitcode), so they build
# with -nogpulib; the clang-19 sources use no HIP header at all. Nothing here needs a GPU.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
OUT_DIR="${1:-$REPO_ROOT/tests/fixtures/offload}"
PACKAGES=(hipcc clang-19 lld-19 rocm-device-libs binutils)
SEED003_TARGETS=(gfx90a gfx942 gfx1100 gfx1101 gfx1102 gfx1103 gfx1151 gfx1200 gfx1201)

SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi
missing=()
for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "${missing[@]}"
fi

export HIP_PLATFORM=amd   # nvcc may be on PATH; hipcc would pick it
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT_DIR"
cd "$WORK"

cat > hipcc_kernel.hip <<'EOF'
// hip-triage fixture: one kernel; the work-item builtin keeps it free of device-library calls.
#include <hip/hip_runtime.h>
__global__ void add_one(int *p) { p[__builtin_amdgcn_workitem_id_x()] += 1; }
int main() {
  int *d = nullptr;
  if (hipMalloc(&d, 64 * sizeof(int)) != hipSuccess) return 1;
  hipLaunchKernelGGL(add_one, dim3(1), dim3(64), 0, 0, d);
  return hipDeviceSynchronize() == hipSuccess ? 0 : 2;
}
EOF

cat > clang_kernel.hip <<'EOF'
// hip-triage fixture: a kernel without HIP headers or device libraries; the launch API is only
// declared, which is all clang needs to emit the kernel's host stub.
typedef int hipError_t;
struct dim3 { unsigned x, y, z; };
extern "C" hipError_t hipLaunchKernel(const void *f, dim3 grid, dim3 block, void **args, unsigned long shm, void *stream);
#define JOIN(a, b) a##b
#define STUB(k) JOIN(k, _stub)
__attribute__((global)) void KNAME(int *p) { p[__builtin_amdgcn_workitem_id_x()] += 1; }
extern "C" const void *STUB(KNAME)() { return reinterpret_cast<const void *>(&KNAME); }
EOF
echo 'int main() { return 0; }' > main.cpp

arch_flags() { local a; for a in "$@"; do printf -- '--offload-arch=%s ' "$a"; done; }
CLANG19=(clang++-19 -x hip -nogpulib -nohipwrapperinc -O2)

hipcc --offload-arch=gfx906 hipcc_kernel.hip -o hipcc-gfx906
# shellcheck disable=SC2046
hipcc -nogpulib $(arch_flags gfx906 gfx90a:xnack- gfx1030 gfx1100) hipcc_kernel.hip -o hipcc-multi

# shellcheck disable=SC2046
"${CLANG19[@]}" -DKNAME=k_model $(arch_flags "${SEED003_TARGETS[@]}") -c clang_kernel.hip -o model.o
# shellcheck disable=SC2046
"${CLANG19[@]}" -DKNAME=k_sampler $(arch_flags "${SEED003_TARGETS[@]}") -c clang_kernel.hip -o sampler.o
"${CLANG19[@]}" -DKNAME=k_bench --offload-arch=gfx906 -c clang_kernel.hip -o bench.o
clang++-19 -fuse-ld=lld model.o sampler.o bench.o main.cpp -o mini-seed003 \
  -L/usr/lib/x86_64-linux-gnu -lamdhip64

LIB_TARGETS=(gfx906:xnack- gfx90a:xnack+ gfx942:sramecc+:xnack- gfx11-generic gfx1201)
# Generic targets need code object v6.
# shellcheck disable=SC2046
"${CLANG19[@]}" -mcode-object-version=6 -DKNAME=k_lib $(arch_flags "${LIB_TARGETS[@]}") \
  -fPIC -shared clang_kernel.hip -o libplain.so 2>/dev/null
# shellcheck disable=SC2046
"${CLANG19[@]}" -mcode-object-version=6 -DKNAME=k_lib $(arch_flags "${LIB_TARGETS[@]}") \
  --offload-compress -fPIC -shared clang_kernel.hip -o libcompressed.so 2>/dev/null

for name in hipcc-gfx906 hipcc-multi mini-seed003 libplain.so libcompressed.so; do
  strip "$name"
  cp "$name" "$OUT_DIR/$name"
  objcopy -O binary --only-section=.hip_fatbin "$name" "$name.fatbin"
  base="$(readelf -SW "$name" | awk '$2 == ".hip_fatbin" { print $5 }')"
  # Each bundle starts at a bundle or CCOB magic inside the section and runs to the next one.
  python3 - "$name.fatbin" "$((16#$base))" <<'EOF' > "$name.cuts"
import re, sys
data = open(sys.argv[1], "rb").read()
starts = [m.start() for m in re.finditer(rb"__CLANG_OFFLOAD_BUNDLE__|CCOB", data)]
for i, s in enumerate(starts):
    print(s, (starts[i + 1] if i + 1 < len(starts) else len(data)) - s, int(sys.argv[2]) + s)
EOF
  {
    echo "# $name: one line per bundle of .hip_fatbin: file offset, then clang-offload-bundler-19 --list"
    while read -r at size file_offset; do
      dd if="$name.fatbin" of=one.bundle bs=1 skip="$at" count="$size" status=none
      printf '%s %s\n' "$file_offset" "$(clang-offload-bundler-19 --list --type=o --input=one.bundle | sort | tr '\n' ' ' | sed 's/ $//')"
    done < "$name.cuts"
  } > "$OUT_DIR/$name.list.txt"
  {
    echo "\$ grep -a -c __CLANG_OFFLOAD_BUNDLE__ $name"
    grep -a -c __CLANG_OFFLOAD_BUNDLE__ "$name" || true
    echo "\$ grep -a -o -E \"hip[v0-9]*-amdgcn-amd-amdhsa--gfx[0-9a-z]+\" $name | sort | uniq -c"
    grep -a -o -E "hip[v0-9]*-amdgcn-amd-amdhsa--gfx[0-9a-z]+" "$name" | sort | uniq -c || true
  } > "$OUT_DIR/$name.grep.txt"
done

{
  echo "# Offload-bundle fixtures"
  echo
  echo "Made by tools/make_offload_fixtures.sh on $(. /etc/os-release && echo "$PRETTY_NAME") with:"
  echo
  for p in hipcc clang-19 lld-19 rocm-device-libs; do
    echo "- $p $(dpkg-query -W -f='${Version}' "$p")"
  done
  echo
  echo "NAME.list.txt holds what clang-offload-bundler-19 --list printed for each bundle of the"
  echo "file's .hip_fatbin (the tests compare against it when the tool is not installed);"
  echo "NAME.grep.txt the grep -a counts users run. The sources are in the script."
} > "$OUT_DIR/README.md"
ls -l "$OUT_DIR"
