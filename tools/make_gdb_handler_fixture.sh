#!/usr/bin/env bash
# Regenerate tests/fixtures/gdb/signal-handler.txt: gdb's stacks of a program whose own SIGSEGV handler
# runs when a worker thread faults in a shared library (the handler aborts, as crash reporters that
# re-raise do). gdb passes the SIGSEGV on, stops at the SIGABRT, and "thread apply all bt" shows the
# faulting thread as: the handler's frames, "<signal handler called>", the frames that faulted.
# Built and run here with gcc and gdb, in a terminal of 80 columns; nothing needs a GPU.
#
# Usage: tools/make_gdb_handler_fixture.sh [OUTPUT_FILE]   (default: <repo>/tests/fixtures/gdb/signal-handler.txt)
set -euo pipefail
out="${1:-$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/gdb/signal-handler.txt}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lib"
cd "$work"
cat > copy.c <<'C'
struct queue { long *slots; };
long copy_to_queue(struct queue *q, long v) { q->slots[3] = v; return v; }
C
cat > main.c <<'C'
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
struct queue;
long copy_to_queue(struct queue *q, long v);
static void on_fault(int sig) { (void)sig; abort(); }
static void *worker(void *p) { copy_to_queue(p, 7); return NULL; }
int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = on_fault;
    sigaction(SIGSEGV, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    return 0;
}
C
gcc -O1 -fPIC -shared -o lib/libcopy.so copy.c
gcc -g -O0 -o app main.c -L lib -lcopy -Wl,-rpath,"$work/lib" -lpthread
script -qc "gdb -q -nx -ex 'set style enabled off' -ex 'set width 80' -ex 'set height 0' -ex 'set confirm off' \
    -ex 'handle SIGSEGV nostop noprint pass' -ex run -ex 'thread apply all bt' -ex quit ./app" /dev/null \
    | tr -d '\r' | sed -n '/received signal/,$p' | grep -v '^A debugging session is active' | sed '/^$/d' > "$out"
ls -l "$out"
