#!/usr/bin/env bash
# Regenerate tests/fixtures/selfstacks/: what a program's own crash handler really prints, built
# and run here (gcc, g++, Debian's libabsl-dev and libgoogle-glog-dev; nothing needs a GPU). The crash is a null read
# in a shared library under an /opt/rocm-6.2.0/lib-like path, called from the program.
#
# Usage: tools/make_selfstack_fixtures.sh [OUTPUT_DIR]   (default: <repo>/tests/fixtures/selfstacks)
#
# Writes:
#   glibc-handler.txt    a SIGSEGV handler's "Caught signal 11" line and backtrace_symbols_fd's frames:
#                        the handler's own frame, libc's signal trampoline, then the crash
#   abseil-handler.txt   absl::InstallFailureSignalHandler's report: "*** SIGSEGV received at time=...",
#                        "PC: @ ..." and "@ ..." frames
#   glog-handler.txt     google::InstallFailureSignalHandler's report: "*** Aborted at ...", "PC: @ ...",
#                        "*** SIGSEGV (@0x10) received by PID ...", "@ ADDR SYMBOL" frames
set -euo pipefail
out="${1:-$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/selfstacks}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/opt/rocm-6.2.0/lib"
cd "$work"

cat > crashy.c <<'C'
int crashy_read(int *p) { return p[4]; }
C
cat > glibc.c <<'C'
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int crashy_read(int *p);
static void handler(int sig) {
    void *frames[32];
    int n = backtrace(frames, 32);
    fprintf(stderr, "Caught signal %d (%s)\n", sig, sig == SIGSEGV ? "Segmentation fault" : "?");
    backtrace_symbols_fd(frames, n, 2);
    _exit(128 + sig);
}
int run(int *p) { return crashy_read(p) + 1; }
int main(void) { signal(SIGSEGV, handler); return run(0); }
C
cat > abseil.cc <<'C'
#include "absl/debugging/failure_signal_handler.h"
#include "absl/debugging/symbolize.h"
extern "C" int crashy_read(int *p);
int run(int *p) { return crashy_read(p) + 1; }
int main(int, char **argv) {
  absl::InitializeSymbolizer(argv[0]);
  absl::InstallFailureSignalHandler(absl::FailureSignalHandlerOptions());
  return run(nullptr);
}
C
cat > glog.cc <<'C'
#include <glog/logging.h>
extern "C" int crashy_read(int *p);
int run(int *p) { return crashy_read(p) + 1; }
int main(int, char **argv) {
  google::InitGoogleLogging(argv[0]);
  google::InstallFailureSignalHandler();
  return run(nullptr);
}
C
lib="$work/opt/rocm-6.2.0/lib"
gcc -g -O0 -fPIC -shared -o "$lib/libcrashy.so" crashy.c
gcc -g -O0 -rdynamic -o app glibc.c -L"$lib" -lcrashy -Wl,-rpath,"$lib"
g++ -g -O0 -o absl-app abseil.cc -L"$lib" -lcrashy -Wl,-rpath,"$lib" \
    $(pkg-config --libs absl_failure_signal_handler absl_symbolize)
./app 2> "$out/glibc-handler.txt" || true
g++ -g -O0 -o glog-app glog.cc -L"$lib" -lcrashy -Wl,-rpath,"$lib" $(pkg-config --libs libglog)
./absl-app 2> "$out/abseil-handler.txt" || true
./glog-app 2> "$out/glog-handler.txt" || true
echo "wrote $out/glibc-handler.txt $out/abseil-handler.txt $out/glog-handler.txt"
