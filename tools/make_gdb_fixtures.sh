#!/usr/bin/env bash
# Regenerate tests/fixtures/gdb/: what gdb really prints when a program dies, in the shapes
# users paste from a terminal (80 columns, so gdb moves "from LIB" and long argument lists to
# the next line). Built and run here with gcc and gdb; nothing needs a GPU.
#
# Usage: tools/make_gdb_fixtures.sh [OUTPUT_DIR]     (default: <repo>/tests/fixtures/gdb)
#
# Writes:
#   wrapped-from.txt   SIGSEGV in a shared library under /opt/rocm-6.2.0/lib-like path: gdb's stop
#                      line ("Thread 1 "app" received signal ...", then "0x... in f ()") and
#                      frames whose "from /path/lib.so" is on the next line
#   no-address.txt     SIGABRT in a -g build: frame #0 without an address, arguments and
#                      "at file:line" wrapped onto the next line
#   null-call.txt      a call through a null function pointer: "0x0000000000000000 in ?? ()"
#   interrupted.txt    SIGINT (a Ctrl-C, as when a user stops a hung program) while the main thread waits in
#                      the library: gdb's stop line in a wait loop, which is no crash and no faulting module
set -euo pipefail
out="${1:-$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/gdb}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/opt/rocm-6.2.0/lib"
cd "$work"

cat > blit.c <<'C'
struct blit_manager { int refs; int pad; };
int release_blit_manager_refcount(struct blit_manager *m, int a, int b) {
    return __atomic_fetch_sub(&m->refs, 1, __ATOMIC_SEQ_CST) + a + b;
}
int crash_here(struct blit_manager *m) { return release_blit_manager_refcount(m, 1, 2); }
void signal_wait_relaxed(volatile int *signal) { while (*signal == 0) { } }
C
cat > fail.c <<'C'
#include <stdlib.h>
void fail_fast(int code) { if (code) abort(); }
C
cat > main.c <<'C'
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
struct blit_manager;
int crash_here(struct blit_manager *m);
void signal_wait_relaxed(volatile int *signal);
static volatile int never;
static void *interrupt(void *p) { (void)p; usleep(300000); kill(getpid(), SIGINT); return NULL; }
void fail_fast(int code);
typedef void (*launch_fn)(void);
launch_fn table[2];
static void *worker(void *p) { (void)p; return NULL; }
int main(int argc, char **argv) {
    pthread_t t; pthread_create(&t, NULL, worker, NULL); pthread_join(t, NULL);
    if (argv[1] && argv[1][0] == 's') printf("%d\n", crash_here(NULL));
    if (argv[1] && argv[1][0] == 'a') fail_fast(3);
    if (argv[1] && argv[1][0] == 'i') { pthread_create(&t, NULL, interrupt, NULL); signal_wait_relaxed(&never); }
    table[argc - 1]();
    return 0;
}
C
gcc -O1 -fPIC -shared -o opt/rocm-6.2.0/lib/libblit.so blit.c
gcc -g -O0 -fPIC -shared -o libfail.so fail.c
gcc -g -O0 -o app main.c -L opt/rocm-6.2.0/lib -L . -lblit -lfail \
    -Wl,-rpath,"$work/opt/rocm-6.2.0/lib" -Wl,-rpath,"$work" -lpthread

run() {  # gdb in a terminal of 80 columns, colours off, the program's own lines kept
    script -qc "gdb -q -nx -ex 'set style enabled off' -ex 'set width 80' -ex 'set height 0' \
        -ex 'set confirm off' -ex run -ex bt -ex quit --args ./app $1" /dev/null \
        | tr -d '\r' | sed -n '/received signal/,$p' | grep -v '^A debugging session is active' | sed '/^$/d'
}
run s > "$out/wrapped-from.txt"
run a > "$out/no-address.txt"
run n > "$out/null-call.txt"
run i > "$out/interrupted.txt"
ls -l "$out"
