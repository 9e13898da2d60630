#!/usr/bin/env bash
# Regenerate tests/fixtures/rocm5-nogpu/: REAL AMD_LOG_LEVEL output of Debian's
# AMD HIP runtime (ROCm 5.2.3, bookworm) on a machine WITHOUT a GPU (/dev/kfd
# absent), plus rocminfo output.
#
# Usage: tools/make_rocm5_nogpu_fixtures.sh [OUTPUT_DIR]
#   default OUTPUT_DIR: <repo>/tests/fixtures/rocm5-nogpu
#
# Installs hipcc, libamdhip64-5, rocminfo, rocm-device-libs and libamd-comgr2
# with apt-get (needs root, or sudo), builds a tiny vector-add HIP program for
# gfx906 in a temp dir, runs it under several AMD_LOG_LEVEL/AMD_LOG_MASK
# settings and writes, per run, <name>.stdout.txt, <name>.stderr.txt and
# <name>.exitcode.txt, plus vector_add.hip and README.md. No binary is kept.
#
# Timestamps, PIDs, thread ids and pointer values differ on every run; the
# line shapes do not.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
OUT_DIR="${1:-$REPO_ROOT/tests/fixtures/rocm5-nogpu}"

PACKAGES=(hipcc libamdhip64-5 rocminfo rocm-device-libs libamd-comgr2)
# Packages whose versions are recorded in README.md.
VERSION_PACKAGES=(hipcc libamdhip64-5 libamdhip64-dev libhsa-runtime64-1 libhsakmt1
                  libamd-comgr2 rocm-device-libs rocminfo clang-15)
OFFLOAD_ARCH="${OFFLOAD_ARCH:-gfx906}"

SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi

echo "== installing ${PACKAGES[*]}" >&2
"${SUDO[@]}" apt-get update -q >&2
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends \
  "${PACKAGES[@]}" >&2

WORK="$(mktemp -d "${TMPDIR:-/tmp}/rocm5-nogpu.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/vector_add.hip" <<'EOF'
// Tiny HIP program used to capture real AMD_LOG_LEVEL runtime output.
// Prints hipGetErrorString() of every HIP call; exits non-zero on the first error.
// With --keep-going it reports every error, carries on, and exits 1 at the end,
// so the runtime logs every API call even when no device is present.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static bool g_keep_going = false;
static int g_failed = 0;

#define CHECK(call)                                                          \
  do {                                                                       \
    hipError_t err_ = (call);                                                \
    std::printf("%s -> %d (%s): %s\n", #call, (int)err_,                     \
                hipGetErrorName(err_), hipGetErrorString(err_));             \
    std::fflush(stdout);                                                     \
    if (err_ != hipSuccess) {                                                \
      std::fprintf(stderr, "vector_add: %s failed: %s\n", #call,             \
                   hipGetErrorString(err_));                                 \
      g_failed = 1;                                                          \
      if (!g_keep_going) return 1;                                           \
    }                                                                        \
  } while (0)

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--keep-going") == 0) g_keep_going = true;
  const int n = 1024;
  const size_t bytes = n * sizeof(float);
  int count = 0;
  CHECK(hipGetDeviceCount(&count));
  std::printf("device count: %d\n", count);

  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK(hipMalloc(&a, bytes));
  CHECK(hipMalloc(&b, bytes));
  CHECK(hipMalloc(&c, bytes));

  float ha[n], hb[n], hc[n];
  for (int i = 0; i < n; ++i) { ha[i] = (float)i; hb[i] = 2.0f * i; }
  CHECK(hipMemcpy(a, ha, bytes, hipMemcpyHostToDevice));
  CHECK(hipMemcpy(b, hb, bytes, hipMemcpyHostToDevice));

  hipLaunchKernelGGL(vector_add, dim3((n + 255) / 256), dim3(256), 0, 0, a, b, c, n);
  CHECK(hipGetLastError());
  CHECK(hipDeviceSynchronize());
  CHECK(hipMemcpy(hc, c, bytes, hipMemcpyDeviceToHost));
  for (int i = 0; i < n && !g_failed; ++i) {
    if (hc[i] != ha[i] + hb[i]) {
      std::fprintf(stderr, "vector_add: mismatch at %d\n", i);
      return 2;
    }
  }
  CHECK(hipFree(a));
  CHECK(hipFree(b));
  CHECK(hipFree(c));
  if (g_failed) {
    std::fprintf(stderr, "vector_add: FAILED\n");
    return 1;
  }
  std::printf("vector_add: OK\n");
  return 0;
}
EOF

echo "== building vector_add for $OFFLOAD_ARCH" >&2
# HIP_PLATFORM=amd: nvcc may be on PATH and hipcc would pick the NVIDIA path.
# --offload-arch: without it hipcc runs rocm_agent_enumerator, which fails
# without a GPU.
(cd "$WORK" && HIP_PLATFORM=amd hipcc --offload-arch="$OFFLOAD_ARCH" -o vector_add vector_add.hip)

mkdir -p "$OUT_DIR"
# Remove files from an earlier run so that no stale capture survives.
rm -f "$OUT_DIR"/*.stdout.txt "$OUT_DIR"/*.stderr.txt "$OUT_DIR"/*.exitcode.txt
cp "$WORK/vector_add.hip" "$OUT_DIR/vector_add.hip"

# capture NAME ENV... -- CMD...
# Runs CMD in $WORK with a clean AMD_*/HIP_* environment plus ENV, writing
# NAME.stdout.txt, NAME.stderr.txt, NAME.exitcode.txt; records the command.
COMMANDS=()
capture() {
  local name="$1"; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local rc=0
  (cd "$WORK" && env -u AMD_LOG_LEVEL -u AMD_LOG_MASK -u HIP_VISIBLE_DEVICES \
     -u ROCR_VISIBLE_DEVICES "${envs[@]}" "$@") \
     > "$OUT_DIR/$name.stdout.txt" 2> "$OUT_DIR/$name.stderr.txt" || rc=$?
  echo "$rc" > "$OUT_DIR/$name.exitcode.txt"
  local cmd="$*"
  if [ "${#envs[@]}" -gt 0 ]; then cmd="${envs[*]} $cmd"; fi
  COMMANDS+=("$(printf '%-34s %s  # exit %s' "$name" "$cmd" "$rc")")
  echo "   $name: exit $rc" >&2
}

echo "== capturing" >&2
capture amd_log_level_0 AMD_LOG_LEVEL=0 -- ./vector_add
capture amd_log_level_1 AMD_LOG_LEVEL=1 -- ./vector_add
capture amd_log_level_3 AMD_LOG_LEVEL=3 -- ./vector_add
capture amd_log_level_4 AMD_LOG_LEVEL=4 -- ./vector_add
# ROCm 5.2.3 parses AMD_LOG_MASK as a decimal number: "0xFFFFFFFF" becomes 0,
# which drops the file:line location (and every masked message).
capture amd_log_level_4_mask_0xFFFFFFFF AMD_LOG_LEVEL=4 AMD_LOG_MASK=0xFFFFFFFF -- ./vector_add
capture amd_log_level_4_mask_4294967295 AMD_LOG_LEVEL=4 AMD_LOG_MASK=4294967295 -- ./vector_add
# 2147418111 = 0x7FFEFFFF: every category except LOG_LOCATION (0x10000).
capture amd_log_level_4_mask_2147418111 AMD_LOG_LEVEL=4 AMD_LOG_MASK=2147418111 -- ./vector_add
capture amd_log_level_3_keep_going AMD_LOG_LEVEL=3 -- ./vector_add --keep-going
capture amd_log_level_4_keep_going AMD_LOG_LEVEL=4 -- ./vector_add --keep-going
capture rocminfo -- rocminfo

# ---------------------------------------------------------------- README.md
first_match() {  # first_match REGEX FILE...: first matching line, verbatim
  local f
  for f in "${@:2}"; do
    if grep -m1 -E -a -- "$1" "$f" 2>/dev/null; then return 0; fi
  done
  echo "(not seen)"
}
# Show ESC as \e so the README stays plain text; everything else is verbatim.
show() { sed -e 's/\x1b/\\e/g'; }

F="$OUT_DIR"
EX_LOC_MSG="$(first_match '^:1:[a-z_]+\.cpp +:[0-9]+ +: ' "$F/amd_log_level_1.stderr.txt" | show)"
EX_LOC_L3="$(first_match '^:3:[a-z_]+\.cpp +:[0-9]+ +: .*Initializing' "$F/amd_log_level_3.stderr.txt" | show)"
EX_ENTRY="$(first_match $'\x1b\\[32m' "$F/amd_log_level_3_keep_going.stderr.txt" | show)"
EX_RET="$(first_match ': Returned hip' "$F/amd_log_level_3.stderr.txt" | show)"
EX_NOLOC="$(first_match '^:[0-9]: {25}:0 +: ' "$F/amd_log_level_4_mask_0xFFFFFFFF.stderr.txt" | show)"
EX_APP_ERR="$(first_match '^vector_add: ' "$F/amd_log_level_3.stderr.txt" | show)"
EX_APP_OUT="$(first_match ' -> ' "$F/amd_log_level_3.stdout.txt" | show)"
EX_RI_OUT="$(first_match '.' "$F/rocminfo.stdout.txt" | show)"
EX_RI_ERR="$(first_match '.' "$F/rocminfo.stderr.txt" | show)"

{
  cat <<'EOF'
# rocm5-nogpu fixtures

Real output of Debian's AMD HIP runtime (ROCm 5.2.3, `libamdhip64-5`) and of
`rocminfo`, captured on an x86-64 Debian 12 container with **no GPU** (no
`/dev/kfd`, no `/dev/dri`, no `/proc/modules`). Every file here, this README
included, is written by `tools/make_rocm5_nogpu_fixtures.sh`; the captures are
unedited. Timestamps, PIDs, thread ids and pointer values change on each run;
line shapes do not.

Files: `vector_add.hip` (the program) and, per run, `NAME.stdout.txt`,
`NAME.stderr.txt`, `NAME.exitcode.txt` (the exit status as a decimal number).
Bytes are kept as captured: some lines end in a space and some contain ANSI
escapes (ESC, shown below as `\e`).

## Package versions (`dpkg-query -W`)

```
EOF
  dpkg-query -W "${VERSION_PACKAGES[@]}" 2>/dev/null || true
  cat <<EOF
\`\`\`

## Commands

Build (in a temp dir; the binary is not kept):

\`\`\`
HIP_PLATFORM=amd hipcc --offload-arch=$OFFLOAD_ARCH -o vector_add vector_add.hip
\`\`\`

Runs (stdout and stderr captured separately; NAME, then the command, then the
exit status seen):

\`\`\`
EOF
  printf '%s\n' "${COMMANDS[@]}"
  cat <<'EOF'
```

## What the outputs show

- `hsa_init` fails (no `/dev/kfd`), so `hipGetDeviceCount` returns
  `hipErrorNoDevice` (100). With `--keep-going`, every later call returns
  `hipErrorInvalidDevice` (101), and the runtime retries HSA init on each call
  (the "Initializing HSA stack" / "hsa_init failed." /
  "Runtime initialization failed" triple repeats).
- AMD_LOG_LEVEL=0 prints no runtime lines; 1 prints the `:1:` lines; 3 adds
  `:3:` lines; 4 prints the same as 3 here, because the runtime never gets
  far enough to reach level-4 messages.
- ROCm 5.2.3 reads AMD_LOG_MASK as decimal: `AMD_LOG_MASK=0xFFFFFFFF` is read
  as 0, so only the always-on `hsa_init failed.` line is printed, with an
  empty file name and line 0. The decimal full mask `4294967295` gives the same
  output as no mask. Without the LOG_LOCATION bit (0x10000), e.g. `2147418111`,
  every line has an empty file name and line 0.
- Runtime log lines go to stderr; the program's own messages go to stdout
  (results) and stderr (`vector_add: ... failed: ...`).
- Runtime line layout (ROCm 5.2.3): `:LEVEL:` + source file padded to 25
  columns + `:` + line padded to 4 + `: ` + 10-digit zero-padded microseconds
  + ` us: ` + PID + ` : [tid:0x` + hex thread id + `] ` + message. Logs
  from newer ROCm releases put PID and tid in one bracket instead
  (`us: [pid:461   tid:0x7f1072d6c8c0]`); that shape is not in these files.

## Distinct line shapes, one verbatim example each

EOF
  printf 'Runtime, level 1, with location (`amd_log_level_1.stderr.txt`):\n\n```\n%s\n```\n\n' "$EX_LOC_MSG"
  printf 'Runtime, level 3, with location (`amd_log_level_3.stderr.txt`):\n\n```\n%s\n```\n\n' "$EX_LOC_L3"
  printf 'Runtime, API entry: call and arguments wrapped in green ANSI escapes (`amd_log_level_3_keep_going.stderr.txt`):\n\n```\n%s\n```\n\n' "$EX_ENTRY"
  printf 'Runtime, API return: ends with `: ` and a trailing space (`amd_log_level_3.stderr.txt`):\n\n```\n%s\n```\n\n' "$EX_RET"
  printf 'Runtime, no location: empty file field, line 0 (`amd_log_level_4_mask_0xFFFFFFFF.stderr.txt`):\n\n```\n%s\n```\n\n' "$EX_NOLOC"
  printf 'Program, stdout (`amd_log_level_3.stdout.txt`):\n\n```\n%s\n```\n\n' "$EX_APP_OUT"
  printf 'Program, stderr (`amd_log_level_3.stderr.txt`):\n\n```\n%s\n```\n\n' "$EX_APP_ERR"
  printf 'rocminfo, stdout: red ANSI escapes (`rocminfo.stdout.txt`):\n\n```\n%s\n```\n\n' "$EX_RI_OUT"
  printf 'rocminfo, stderr: from libkmod, because this container has no /proc/modules (`rocminfo.stderr.txt`):\n\n```\n%s\n```\n' "$EX_RI_ERR"
} > "$OUT_DIR/README.md"

# Keep the captured bytes exactly as they are (no end-of-line conversion).
printf '*.txt -text\n' > "$OUT_DIR/.gitattributes"

echo "== wrote $OUT_DIR:" >&2
ls -1A "$OUT_DIR" >&2
