//===- JemallocOptions.cpp - jemalloc's options for the qopt tools --------===//
//
// Compiled into the tools only when they link jemalloc (tools/CMakeLists.txt):
// jemalloc reads this string at start-up, before the environment's
// MALLOC_CONF, which can still override it.
//
// Importing a large model touches a few hundred MB in small allocations.
// Transparent huge pages (on Linux in "madvise" mode, jemalloc asks for them)
// halve the page-fault time of `qopt --explain` on a 100,000-node graph and
// save about a tenth of its CPU time (bench/explain_bench.sh).
//
//===----------------------------------------------------------------------===//

extern "C" {
// NOLINTNEXTLINE(readability-identifier-naming): jemalloc's symbol.
const char *malloc_conf = "thp:always,metadata_thp:always";
}
