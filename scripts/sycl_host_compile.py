#!/usr/bin/env python3
"""Compile fx sources in clang's SYCL host mode against Kokkos' SYCL backend.

No SYCL compiler can be had here (Debian has none; PyPI's intel-sycl-rt
brings oneAPI's SYCL headers and runtime, not its compiler), and Kokkos'
SYCL targets carry -fsycl, which only a SYCL compiler takes. So each source
is compiled with its own flags from the main build's
compile_commands.json (the first entry of a source two targets compile;
no -Werror: warnings in fx's files are shown), Kokkos 3.4's include
directory replaced by Kokkos 4.6.01 configured with SYCL
(scripts/kokkos4.sh, FX_KOKKOS4_BACKEND=sycl: its include_dirs), in clang's
SYCL host mode (-fsycl-is-host: the host half of what a SYCL compiler does;
it defines SYCL_LANGUAGE_VERSION). The host code, SYCL calls and Kokkos'
SYCL kernel launches are type-checked and compiled to objects, at
OUT_DIR/SOURCE.o; no device code is generated.

usage: sycl_host_compile.py CXX BUILD_DIR KOKKOS_PREFIX OUT_DIR SOURCE...
environment: FX_JOBS (default: the cores this process may use)
"""

import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import time

HOST_MODE = ["-Xclang", "-fsycl-is-host", "-sycl-std=2020", "-DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING"]


def kokkos_includes(prefix):
    with open(os.path.join(prefix, "include_dirs")) as f:
        return [f"-isystem{line.strip()}" for line in f if line.strip()]


def host_flags(command):
    """The build's flags for one source, less its compiler, output, optimisation and Kokkos."""
    args = shlex.split(command)[1:]
    flags, i = [], 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "-c"):
            i += 2
            continue
        if a in ("-isystem", "-I") and os.path.exists(os.path.join(args[i + 1], "Kokkos_Core.hpp")):
            i += 2  # the Kokkos this build used (Debian's 3.4)
            continue
        if not a.startswith("-O") and a != "-Werror":
            flags.append(a)
        i += 1
    return flags


def compile_one(entry, includes, out_dir, cxx):
    source = entry["file"]
    obj = os.path.join(out_dir, os.path.relpath(source, entry["root"]) + ".o")
    os.makedirs(os.path.dirname(obj), exist_ok=True)
    cmd = [cxx, *HOST_MODE, *includes, *host_flags(entry["command"]),
           "-O0", "-Wno-unknown-warning-option", "-c", source, "-o", obj]
    start = time.monotonic()
    run = subprocess.run(cmd, check=False, cwd=entry["directory"], capture_output=True, text=True)
    return source, run.returncode, time.monotonic() - start, run.stderr


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__.strip().splitlines()[-2])
    cxx, build, prefix, out_dir, *sources = sys.argv[1:]
    includes = kokkos_includes(os.path.abspath(prefix))
    out_dir = os.path.abspath(out_dir)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commands = os.path.join(build, "compile_commands.json")
    if not os.path.exists(commands):
        sys.exit(f"sycl_host_compile: no {commands} (FX_BUILD_DIR '{build}': configure it first, ./fx build)")
    entries = {}
    with open(commands) as f:
        for e in json.load(f):
            entries.setdefault(e["file"], e)
    todo = []
    for s in sources:
        path = os.path.join(root, s)
        if path not in entries:
            sys.exit(f"sycl_host_compile: {s} is not in {build}/compile_commands.json (configure with its target)")
        todo.append({**entries[path], "root": root})
    failed = 0
    jobs = int(os.environ.get("FX_JOBS", len(os.sched_getaffinity(0))))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for source, rc, seconds, err in pool.map(lambda e: compile_one(e, includes, out_dir, cxx), todo):
            name = os.path.relpath(source, root)
            print(f"sycl_host_compile: {name} {'compiled' if rc == 0 else 'FAILED'} ({seconds:.0f} s)")
            fx_lines = [line for line in err.splitlines() if "error" in line or ("warning:" in line and root in line)]
            for line in fx_lines[:20]:
                print(f"    | {line}")
            failed += rc != 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
