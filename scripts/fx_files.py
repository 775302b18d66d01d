"""How fx's scripts write a file (the supervisor's merged report, ./fx plot's
picture), as the library does (core/private/fx/detail/files.hpp): an existing
target that is not a regular file (a device node, a FIFO, a socket, a
symbolic link, a directory) is refused, never replaced (as root, /dev/full
once became a regular file holding a run report); the data go to a
temporary created exclusively beside the target and are renamed over it.
"""
import os
import stat
import tempfile

KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
         (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))


class Refused(Exception):
    """The target is no regular file (the message says what it is)."""


def unusable_target(path):
    """Why `path` cannot be written: "" when nothing is there or it is a
    regular file (a link is not followed), else e.g. "/dev/full is a character device"."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return ""
    if stat.S_ISREG(mode):
        return ""
    return f"{path} is " + next((what for test, what in KINDS if test(mode)), "not a regular file")


def unwritable_target(path):
    """Why no file can be written at `path`: what unusable_target says, or
    that its directory takes no new file (under a regular file, in /proc);
    "" when one can (checked by making and removing a temporary there)."""
    why = unusable_target(path)
    if why:
        return why
    try:
        fd, tmp = temp_beside(path)
    except OSError as e:
        return f"no file can be created in '{os.path.dirname(path) or '.'}': {e.strerror}"
    os.close(fd)
    os.unlink(tmp)
    return ""


def temp_beside(path):
    """A file made exclusively beside `path` ("<path>.tmp.XXXXXXXX"): (fd, name)."""
    return tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=os.path.dirname(path) or ".")


def replace_with(tmp, path, mode=0o644):
    """Renames `tmp` over `path` when that is missing or a regular file;
    removes `tmp` and raises Refused otherwise."""
    why = unusable_target(path)
    if why:
        os.unlink(tmp)
        raise Refused(why)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_replacing(path, text, mode=0o644):
    """`text` into a temporary beside `path`, renamed over it."""
    why = unusable_target(path)
    if why:
        raise Refused(why)
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
    except BaseException:
        os.unlink(tmp)
        raise
    replace_with(tmp, path, mode)
