#pragma once
// The one way fx writes a file or makes a directory (run report, verdict,
// start-up marks, progress and kill stamps, checkpoints). As root an open
// for writing turned /dev/full into a regular file holding the report, so:
// an existing target that is not a regular file (or a directory where one
// is meant) is refused, never replaced; data go to a temporary created
// exclusively beside the target and renamed over it (a reader never sees
// half a file); the last component of a path is never followed when it is
// a symbolic link (only the directories the user named may be links).
// Every function returns "" on success, else why not: what the target is
// ("/dev/full is a character device") or the system's error text (callers
// name the file and throw their own fx::Error subclass).
#include <string>
#include <string_view>

namespace fx::detail {

enum class PathKind { file, directory };

// The system's text for an error number, without strerror's shared buffer
// (the copier and deadline threads may report beside the main thread).
std::string errno_text(int err);

// Why an existing `path` cannot be written as `kind`: "" when nothing is
// there or it is a regular file (a directory, possibly through a link the
// user named, for `directory`), else e.g. "/dev/full is a character device".
std::string unusable_target(const std::string& path, PathKind kind);

// unusable_target, then where fx creates what is missing: the nearest
// existing ancestor (or, for a file, its directory, which holds the
// temporary) must be a directory where this process can create a file.
std::string unwritable_reason(const std::string& path, PathKind kind);

// A file created exclusively (O_EXCL, mode 0600) beside `target`, named
// "<target>.tmp.XXXXXX"; the caller writes it through `fd` or by `path`.
struct TempFile {
  std::string path;
  int fd = -1;
};
std::string create_temp_beside(const std::string& target, TempFile& out);

// Renames `tmp` over `target` when `target` is missing or a regular file
// (the temporary is removed otherwise or on failure).
std::string replace_with(const std::string& tmp, const std::string& target);

// The whole of it: `data` in a temporary beside `target` (permissions
// `mode`, fsync'ed when `durable`), renamed over `target`.
std::string write_replacing(const std::string& target, std::string_view data, unsigned mode,
                            bool durable = false);

// mkdir `dir` (one level, `mode`): an existing directory is fine unless it
// is a symbolic link (fx names this directory, not the user).
std::string make_directory(const std::string& dir, unsigned mode);

}  // namespace fx::detail
