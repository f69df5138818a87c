#!/bin/sh
# Usage: run-limited.sh STDOUT_FILE STDERR_FILE COMMAND [ARGS...]
# Like ../../Errors/Inputs/exit-status.sh: runs COMMAND with its stdout/stderr
# sent to the two files, then prints "exit status N" so a test can FileCheck
# the exact exit code. In addition the command runs with at most 4 GB of
# virtual memory (so a hostile input that makes qopt allocate a huge tensor
# fails the test instead of eating the machine's memory) and 60 seconds
# (a hang shows as "exit status 124"). The memory limit is skipped for
# AddressSanitizer builds, whose shadow memory needs far more address space.
out=$1
err=$2
shift 2
tool=$(command -v "$1")
if [ -n "$tool" ] && ! grep -q __asan_init "$tool"; then
  ulimit -v 4000000
fi
timeout 60 "$@" >"$out" 2>"$err"
echo "exit status $?"
