#!/usr/bin/env bash
# Regenerate tests/fixtures/toolstacks/: what lldb and Valgrind really print when a program dies
# inside a shared library, with symbols and stripped. Built and run here with gcc, lldb-15 and
# valgrind (Debian: apt-get install gcc lldb-15 python3-lldb-15 valgrind); nothing needs a GPU.
#
# Usage: tools/make_toolstack_fixtures.sh [OUTPUT_DIR]     (default: <repo>/tests/fixtures/toolstacks)
#
# Writes:
#   lldb.txt              `lldb --batch -o run -k bt`: the stop, its frame #0 and the whole bt (symbols, files)
#   lldb-stripped.txt     the same with a stripped library: ___lldb_unnamed_symbol frames, "+ N" offsets
#   valgrind.txt          memcheck: the invalid read's stack, then "Process terminating" and the crash's stack
#   valgrind-stripped.txt the same with a stripped library: "??? (in /path/lib.so)" frames
set -euo pipefail
out="${1:-$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/toolstacks}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/lib"
cd "$work"

cat > queue.c <<'C'
struct queue { int len; const char *packets; };
static int sum_packets(const struct queue *q) {
    int s = 0;
    for (int i = 0; i < q->len; i++) s += q->packets[i];
    return s;
}
int queue_submit(const struct queue *q, int depth) {
    return depth > 0 ? queue_submit(q, depth - 1) + 1 : sum_packets(q);
}
C
cat > main.c <<'C'
#include <stdio.h>
struct queue { int len; const char *packets; };
int queue_submit(const struct queue *q, int depth);
int main(void) {
    struct queue q = { 16, (const char *)0x18 };
    printf("%d\n", queue_submit(&q, 2));
    return 0;
}
C
gcc -g -O0 -fPIC -shared -o lib/libqueue.so queue.c
gcc -g -O0 -o app main.c -L lib -lqueue -Wl,-rpath,"$work/lib"

debug() {  # lldb's and valgrind's output, the temporary folder's name made stable
    lldb-15 --batch -o run -k bt -- ./app 2>&1 | grep -v -e 'embedded_interpreter' -e '^Traceback' -e '^  File' \
        | sed "s#$work#/home/user/queue#g" > "$out/lldb$1.txt"
    valgrind ./app 2>&1 | sed "s#$work#/home/user/queue#g" > "$out/valgrind$1.txt" || true
}
debug ""
strip --strip-all lib/libqueue.so
debug "-stripped"
ls -l "$out"
