#!/bin/sh
# Usage: run-limited.sh STDOUT_FILE STDERR_FILE COMMAND [ARGS...]
# Like ../../Errors/Inputs/exit-status.sh: runs COMMAND with its stdout/stderr
# sent to the two files, then prints "exit status N" so a test can FileCheck
# the exact exit code. In addition the command runs with at most 4 GB of
# virtual memory (so a hostile input that makes qopt allocate a huge tensor
# fails the test instead of eating the machine's memory) and 60 seconds
# (a hang shows as "exit status 124"). AddressSanitizer builds skip the
# memory limit (their shadow memory needs far more address space) and get
# 300 seconds: they run 3-10x slower, and a 16,384-leaf Concat tree took
# 62 s under ASan on a 2-vCPU machine busy with another build.
out=$1
err=$2
shift 2
tool=$(command -v "$1")
seconds=60
if [ -n "$tool" ] && grep -q __asan_init "$tool"; then
  seconds=300
else
  ulimit -v 4000000
fi
timeout $seconds "$@" >"$out" 2>"$err"
echo "exit status $?"
