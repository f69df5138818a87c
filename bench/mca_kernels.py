#!/usr/bin/python3
"""What LLVM's scheduling models predict for the int8 kernels' hot loops, on CPUs this
machine may not have.

usage: bench/mca_kernels.py [--lib build/lib/libQoptKernels.so] [--mca llvm-mca-14]

A prediction, not a measurement: the issue's speed targets are for AVX512-VNNI and AMX machines,
and a session may only have AVX2. This reads the kernels' machine code out of the built library
(objdump), finds each family's hot loop (the innermost loop with the most multiply-add
instructions, or the conv epilogue's 4-pixel loop), and runs llvm-mca on it for a few CPU models:

  gemm   each register tile (one per row and panel count): cycles per k group, and the share
         of the multiply-add bound (as many multiply-adds alone, independent, through the same
         model): 100% means the tile issues multiply-adds as fast as the model lets them go;
  epilogue  cycles per output element (relu and SiLU onto u8, no residual; the loop the
         compiler laid out without the bias load, which it keeps out of line).

llvm-mca 14 has no model for AMX's tdpbusd or for Zen 4, so the avx512vnni figures are Intel's
(icelake-server, sapphirerapids) and there are none for amx. Memory is ideal in the model (every
load hits L1): im2col, the widening pass and cache misses are not in these numbers, and the
models are approximate (on a Zen 3 core the avx2 tile runs at its register-only loop's rate,
where the znver3 model predicts two thirds of it). qopt-bench-kernels measures whole conv steps
on the machine it runs on; a loop iteration is one k group (the tiles' loops are not unrolled).
"""

import argparse
import re
import subprocess
import sys
import tempfile

INSTRUCTION = re.compile(r"\s*([0-9a-f]+):\s+(.*)")
JUMP = re.compile(r"j\w+\s+([0-9a-f]+)")


def functions(disassembly):
    """name -> [(address, instruction text)] for each function in objdump's output."""
    result, name = {}, None
    for line in disassembly.splitlines():
        header = re.match(r"[0-9a-f]+ <(.*)>:$", line)
        if header:
            name = header.group(1)
            result[name] = []
            continue
        match = INSTRUCTION.match(line)
        if name and match:
            text = re.sub(r"\s+<.*>", "", match.group(2).strip())
            result[name].append((int(match.group(1), 16), text))
    return result


def loops(body):
    """Every innermost loop (closed by a backward jump, with none inside it):
    its instructions, the jump last."""
    index = {address: i for i, (address, _) in enumerate(body)}
    backward = []
    for i, (address, text) in enumerate(body):
        jump = JUMP.match(text)
        if jump:
            target = int(jump.group(1), 16)
            if target < address and target in index:
                backward.append((index[target], i))
    for first, last in backward:
        if not any(first <= f and l < last for f, l in backward if (f, l) != (first, last)):
            yield body[first:last + 1]


def mnemonic_of(text):
    words = text.split()
    return words[1] if words[0] == "{vex}" and len(words) > 1 else words[0]


def count(loop, mnemonic):
    return sum(1 for _, text in loop if mnemonic_of(text) == mnemonic)


def mca_cycles(mca, cpu, instructions, iterations=200):
    """llvm-mca's cycles per iteration of `instructions` (jumps and calls left out)."""
    lines = [".intel_syntax noprefix"]
    for text in instructions:
        if JUMP.match(text) or text.startswith("call"):
            continue
        lines.append(re.sub(r"\b([XYZ]MMWORD|DWORD|QWORD) PTR", lambda m: m.group(0).lower(), text))
    with tempfile.NamedTemporaryFile("w", suffix=".s") as source:
        source.write("\n".join(lines) + "\n")
        source.flush()
        out = subprocess.run([mca, "-mtriple=x86_64", "-mcpu=" + cpu,
                              "-iterations=%d" % iterations, source.name],
                             capture_output=True, text=True)
    total = re.search(r"Total Cycles:\s+(\d+)", out.stdout)
    if not total:
        return None
    return int(total.group(1)) / iterations


def find(funcs, pattern):
    """The function whose name matches `pattern`, shortest first (not a
    lambda inside it)."""
    names = sorted((name for name in funcs if re.search(pattern, name)), key=len)
    return funcs[names[0]] if names else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lib", default="build/lib/libQoptKernels.so")
    parser.add_argument("--mca", default="llvm-mca-14")
    args = parser.parse_args()
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-M", "intel", "-C",
                                  args.lib], capture_output=True, text=True, check=True).stdout
    funcs = functions(disassembly)

    print("GEMM register tiles, largest first (cycles per k group; share of the multiply-add "
          "bound)")
    gemms = [
        ("avx2", r"^qopt::kernels::gemm::avx2\(", "vpmaddwd", 16, ["znver3", "icelake-server"]),
        ("avxvnni", r"^qopt::kernels::gemm::avxVnni\(", "vpdpbusd", 32,
         ["alderlake", "sapphirerapids"]),
        ("avx512vnni", r"^qopt::kernels::gemm::avx512Vnni\(", "vpdpbusd", 64,
         ["icelake-server", "sapphirerapids"]),
    ]
    for family, pattern, mnemonic, macs_each, cpus in gemms:
        body = find(funcs, pattern)
        if body is None:
            print("  %-11s not found in %s" % (family, args.lib))
            continue
        # Every register tile (innermost loops with 8 or more multiply-adds;
        # a family has one per row and panel count), largest first.
        tiles = sorted((loop for loop in loops(body) if count(loop, mnemonic) >= 8),
                       key=lambda loop: -count(loop, mnemonic))
        if not tiles:
            print("  %-11s no %s loop" % (family, mnemonic))
            continue
        seen = set()
        for hot in tiles:
            multiplies = [text for _, text in hot if mnemonic_of(text) == mnemonic]
            # One accumulator per multiply-add of a k group (the compiler may
            # move them between registers; the tile's design counts).
            accumulators = len(multiplies)
            # Rows: one broadcast of A each; B vectors: the rest of the tile.
            rows = sum(1 for _, text in hot if mnemonic_of(text).startswith("vpbroadcast"))
            if rows == 0 or (rows, len(multiplies)) in seen:
                continue
            seen.add((rows, len(multiplies)))
            wide = "zmm" if "zmm" in multiplies[0] else "ymm"
            prefix = "{vex} " if multiplies[0].startswith("{vex}") else ""
            # The bound: as many of the multiply-adds alone, into as many
            # accumulators (each waits on its own last update, as in the tile).
            sources = "%s30, %s31" % (wide, wide) if wide == "zmm" else "ymm14, ymm15"
            alone = ["%s%s %s%d, %s" % (prefix, mnemonic, wide, i % accumulators, sources)
                     for i in range(len(multiplies))]
            for cpu in cpus:
                cycles = mca_cycles(args.mca, cpu, [text for _, text in hot])
                bound = mca_cycles(args.mca, cpu, alone)
                if cycles is None or bound is None:
                    print("  %-11s %-15s llvm-mca cannot model this loop" % (family, cpu))
                    continue
                print("  %-11s %-15s %2d rows x %d B vectors: %2d x %-8s %6.1f cycles a k group"
                      "  %4.0f%% of the bound" % (family, cpu, rows, len(multiplies) // rows,
                                                 len(multiplies), mnemonic, cycles,
                                                 100 * bound / cycles))

    print("conv epilogue, 4 pixels a loop (cycles per output element, u8 result, no residual)")
    epilogues = [("8 lanes", "Avx2Lanes", 8, ["znver3", "icelake-server"]),
                 ("16 lanes", "Avx512Lanes", 16, ["icelake-server", "sapphirerapids"])]
    for label, lanes, width, cpus in epilogues:
        for activation, code, divisions in (("relu", 1, 4), ("silu", 5, 8)):
            body = find(funcs, r"finishRowsWith<\(anonymous namespace\)::%s, "
                        r"\(qopt::kernels::epilogue::VectorActivation\)%d>" % (lanes, code))
            candidates = [loop for loop in loops(body or [])
                          if count(loop, "vdivps") == divisions
                          and not any(text.startswith("call") for _, text in loop)]
            if not candidates:
                print("  %-8s %-4s not found" % (label, activation))
                continue
            hot = min(candidates, key=len)
            for cpu in cpus:
                cycles = mca_cycles(args.mca, cpu, [text for _, text in hot])
                if cycles is None:
                    print("  %-8s %-4s %-15s llvm-mca cannot model this loop" % (
                        label, activation, cpu))
                    continue
                print("  %-8s %-4s %-15s %5.2f cycles an element" % (
                    label, activation, cpu, cycles / (4 * width)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
