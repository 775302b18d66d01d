#!/usr/bin/env python3
"""Copies a node-local checkpoint directory and damages the copy, for the
node level's fallback tests (tests/mpi/data_store/CMakeLists.txt).

usage: node_damage.py SRC DST CASE
  own      16 bytes flipped in rank 1's image of the newest version
  both     the same in rank 1's image and in the partner copy of it
  every    'both', in every version
  file     the newest version's directory replaced by a regular file
SRC holding node/ and hdf5/ (both storage levels), DST/hdf5 damaged:
  hdf5_newest  rank 1's HDF5 file of the newest version zeroed (same size)
  hdf5_every   the same in every HDF5 version
  all_every    hdf5_every, and 'every' in DST/node
"""
import re
import shutil
import sys
from pathlib import Path


def versions(root):
    return sorted((p for p in root.iterdir() if p.name.startswith("iter-") and p.is_dir()), reverse=True)


def flip(path, offset=4096 + 200, count=16):
    data = bytearray(path.read_bytes())
    for i in range(offset, offset + count):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def holder_of(version, rank):
    """The partner file holding `rank`'s image, as its writer's marker names it."""
    pattern = re.compile(rf"\{{rank: {rank}, file: (partner-\d+\.img),")
    for marker in version.glob("rank-*.marker"):
        found = pattern.search(marker.read_text())
        if found:
            return version / found.group(1)
    sys.exit(f"node_damage: no partner copy of rank {rank} in {version}")


def damage_node(vs, case):
    if case == "own":
        flip(vs[0] / "rank-000001.img")
    elif case in ("both", "every"):
        for v in vs if case == "every" else vs[:1]:
            flip(v / "rank-000001.img")
            flip(holder_of(v, 1))
    elif case == "file":
        shutil.rmtree(vs[0])
        vs[0].write_text("not a version\n")
    else:
        sys.exit(f"node_damage: unknown case '{case}'")


def damage_hdf5(vs, every):
    for v in vs if every else vs[:1]:
        f = v / "rank-000001.h5"
        f.write_bytes(bytes(f.stat().st_size))


def versions_under(root):
    vs = versions(root)
    if not vs:
        sys.exit(f"node_damage: no version under {root}")
    return vs


def main():
    src, dst, case = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    if case in ("hdf5_newest", "hdf5_every", "all_every"):
        vs = versions_under(dst / "hdf5")
        damage_hdf5(vs, case != "hdf5_newest")
        if case == "all_every":
            vs += versions_under(dst / "node")
            damage_node(versions_under(dst / "node"), "every")
    else:
        vs = versions_under(dst)
        damage_node(vs, case)
    print(f"node_damage: {case} in {dst} (versions {[str(v.relative_to(dst)) for v in vs]})")


if __name__ == "__main__":
    main()
