#!/bin/sh
# Usage: expect-error.sh COMMAND [ARGS...]
# Runs COMMAND, then prints its stderr between two marker lines followed by
# its exit status and how many lines it wrote to stdout:
#
#   --- stderr
#   qopt: error: ...
#   --- exit status 1, 0 stdout lines
#
# so that one FileCheck (with CHECK-NEXT) can require exactly one error line,
# exit status exactly 1 (`not` accepts any non-zero status) and no stdout.
out=$(mktemp) || exit 2
err=$(mktemp) || exit 2
"$@" >"$out" 2>"$err"
status=$?
echo "--- stderr"
cat "$err"
echo "--- exit status $status, $(wc -l <"$out" | tr -d ' ') stdout lines"
rm -f "$out" "$err"
