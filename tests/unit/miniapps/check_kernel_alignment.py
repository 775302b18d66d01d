#!/usr/bin/python3
"""The minife kernels start on 64-byte boundaries in each binary given.

    check_kernel_alignment.py EXE...

The fx app and its baseline run the same kernels (minife.hpp, reduce.hpp);
unaligned, the same machine code ran 15-40 % apart depending on where the
linker put it (SpMV's inner loop straddling a 64-byte boundary or not), so
the overhead comparison measured code placement (issue 29 item 6). Built
with -falign-functions=64 -falign-loops=64 (miniapps/minife/CMakeLists.txt)
every kernel, and so every loop in it, sits at the same alignment in both.
"""
import re
import subprocess
import sys

KERNELS = re.compile(r"^(miniapps::minife::spmv\(|double miniapps::ordered_sum<)")


def main():
    bad = []
    for exe in sys.argv[1:]:
        out = subprocess.run(["nm", "-C", exe], check=True, capture_output=True, text=True).stdout
        found = 0
        for line in out.splitlines():
            addr, kind, name = line.split(" ", 2) if line.count(" ") >= 2 else ("", "", "")
            if kind not in ("T", "t", "W", "w") or not KERNELS.match(name):
                continue
            found += 1
            if int(addr, 16) % 64:
                bad.append(f"{exe}: {name[:60]}... at {addr} ({int(addr, 16) % 64} past a 64-byte boundary)")
        if found < 2:
            bad.append(f"{exe}: the kernels (spmv, ordered_sum) not found in its symbols")
        print(f"check_kernel_alignment: {exe}: {found} kernels")
    if bad:
        sys.exit("check_kernel_alignment:\n  " + "\n  ".join(bad))


if __name__ == "__main__":
    main()
