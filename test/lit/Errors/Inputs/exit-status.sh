#!/bin/sh
# Usage: exit-status.sh STDOUT_FILE STDERR_FILE COMMAND [ARGS...]
# Runs COMMAND with its stdout/stderr sent to the two files, then prints
# "exit status N" so a test can FileCheck the exact exit code (lit's internal
# shell has no $?, and `not` accepts any non-zero status).
out=$1
err=$2
shift 2
"$@" >"$out" 2>"$err"
echo "exit status $?"
