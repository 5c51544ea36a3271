"""Mirror a checkout into a fixed directory by content: files whose bytes are unchanged keep their
old modification times, changed and new ones are written, everything else there is deleted.

Cargo's fingerprints include each workspace crate's absolute path and its sources' mtimes, so a
fresh clone at a new path recompiles every workspace crate, twice (the wheel and the test-hooks
build: about 5 of CI's 30 minutes). Building from a stable copy synced this way recompiles only
what changed. Usage: stable_copy.py SOURCE DEST"""

import os
import shutil
import sys

src, dest = (os.path.abspath(p) for p in sys.argv[1:3])
seen = set()
for dirpath, dirnames, filenames in os.walk(src):
    rel_dir = os.path.relpath(dirpath, src)
    os.makedirs(os.path.join(dest, rel_dir), exist_ok=True)
    seen.add(os.path.normpath(rel_dir))
    for name in filenames:
        rel = os.path.normpath(os.path.join(rel_dir, name))
        seen.add(rel)
        a, b = os.path.join(src, rel), os.path.join(dest, rel)
        if os.path.islink(a):
            if os.path.lexists(b):
                os.remove(b)
            os.symlink(os.readlink(a), b)
            continue
        with open(a, "rb") as f:
            data = f.read()
        try:
            with open(b, "rb") as f:
                same = f.read() == data
        except (FileNotFoundError, IsADirectoryError):
            same = False
        if not same:
            if os.path.isdir(b) and not os.path.islink(b):
                shutil.rmtree(b)
            with open(b, "wb") as f:
                f.write(data)
        shutil.copymode(a, b)
for dirpath, dirnames, filenames in os.walk(dest, topdown=False):
    rel_dir = os.path.normpath(os.path.relpath(dirpath, dest))
    for name in filenames:
        rel = os.path.normpath(os.path.join(rel_dir, name))
        if rel not in seen:
            os.remove(os.path.join(dest, rel))
    if rel_dir not in seen:
        shutil.rmtree(dirpath, ignore_errors=True)
