#!/usr/bin/env bash
# Regenerate tests/fixtures/libloads/: the listings that show which shared libraries a running process
# loaded and from where, printed here by the real tools (ldd, glibc's LD_DEBUG, /proc/PID/maps, lsof,
# gdb's "info sharedlibrary"). Nothing needs a GPU: small stand-in libraries carry ROCm's file names,
# librocblas.so.4 and libhsa-runtime64.so.1 in an /opt/rocm-6.2.0/lib-like folder and libamdhip64.so in a
# PyTorch wheel's torch/lib-like folder (the mix of two installs in one process). The temporary folder's
# prefix is cut from the output, so the paths read as /opt/rocm-6.2.0/lib and /home/u/venv/...
#
# Usage: tools/make_libload_fixtures.sh [OUTPUT_DIR]   (default: <repo>/tests/fixtures/libloads)
set -euo pipefail
out="${1:-$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/libloads}"
work="$(mktemp -d /tmp/ll.XXXXXX)"
trap 'rm -rf "$work"' EXIT
rocm="$work/opt/rocm-6.2.0/lib"
wheel="$work/home/u/venv/lib/python3.12/site-packages/torch/lib"
mkdir -p "$out" "$rocm" "$wheel"
cd "$work"
echo 'int hsa_init(void) { return 0; }' > hsa.c
echo 'int hsa_init(void); int hipInit(unsigned f) { return hsa_init() + (int)f; }' > hip.c
echo 'int hipInit(unsigned f); int rocblas_create_handle(void **h) { *h = 0; return hipInit(0); }' > blas.c
cat > app.c <<'C'
#include <stdio.h>
#include <unistd.h>
int rocblas_create_handle(void **h);
int main(void) {
    void *h;
    int rc = rocblas_create_handle(&h);
    printf("ready %d\n", rc);
    fflush(stdout);
    sleep(5);
    return rc;
}
C
gcc -shared -fPIC -o "$rocm/libhsa-runtime64.so.1" -Wl,-soname,libhsa-runtime64.so.1 hsa.c
gcc -shared -fPIC -o "$wheel/libamdhip64.so" -Wl,-soname,libamdhip64.so hip.c "$rocm/libhsa-runtime64.so.1"
gcc -shared -fPIC -o "$rocm/librocblas.so.4" -Wl,-soname,librocblas.so.4 blas.c "$wheel/libamdhip64.so"
gcc -g -o app app.c "$rocm/librocblas.so.4" -Wl,-rpath,"$rocm:$wheel" -Wl,--disable-new-dtags
cut_prefix() { sed "s#$work##g"; }
{ echo "\$ ldd /home/u/bin/app"; ldd ./app; } | cut_prefix > "$out/ldd.txt"
LD_DEBUG=libs ./app 2>&1 >/dev/null | grep -E 'calling init:|find library=|trying file=' | cut_prefix > "$out/ld-debug-libs.txt"
./app > /dev/null 2>&1 & pid=$!
sleep 1
{ echo "\$ cat /proc/$pid/maps"; cat "/proc/$pid/maps"; } | cut_prefix > "$out/proc-maps.txt"
{ echo "\$ lsof -p $pid"; lsof -p "$pid" 2>/dev/null; } | cut_prefix > "$out/lsof.txt"
wait "$pid"
gdb -q -batch -ex 'break rocblas_create_handle' -ex run -ex 'info sharedlibrary' ./app 2>&1 \
    | grep -vE '^\[Thread debugging|^Using host libthread_db' | cut_prefix > "$out/gdb-sharedlibrary.txt"
