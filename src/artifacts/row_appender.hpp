#pragma once
// Appending whole CSV rows to a file of record (the collectors' samples.csv files) without
// ever leaving a partial line in the middle of it. The caller formats the rows; this class
// owns the file: its header, failed writes, and a file deleted or replaced underneath.
// Nothing here throws on I/O failure: the collectors are best-effort.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace cpupower::artifacts {

// What the path of an open file names now, compared with the file the appender holds
// (st_dev and st_ino of the path against those of the descriptor).
enum class SamplesFileChange {
  none,       // the path still names the open file, at least as long as what was written
  deleted,    // nothing at the path, and the open file has no name left: its rows are gone
  replaced,   // another file at the path, and the open file has no name left
  moved,      // the open file still has a name, but not this path (renamed away)
  truncated,  // the same file, shorter than what the appender put in it
};
std::string_view samples_file_change_name(SamplesFileChange change);

// Not thread-safe: the collectors serialise their writes.
//
// The file only ever grows by whole rows: a write that fails part-way (disk full, EFBIG,
// I/O error) is cut back with ftruncate to the end of its last complete row, so no partial
// line is left for later rows to follow.
class RowAppender {
 public:
  // Opens for appending, creating the file (with `header` and "\r\n") when it is missing or
  // empty. An existing file must start with the same header, so a restarted collector
  // continues the same file instead of mixing layouts; a partial last line it ends with (a
  // killed writer) is cut off first.
  // With `fresh_mode` (a file started afresh on every run, the host collector's) it is
  // created with that mode, any earlier content is truncated away, and each flush's rows are
  // kept all or none, so a sample that does not fit whole is not left half written.
  static Result<std::unique_ptr<RowAppender>> open(const std::string& path, std::string_view header,
                                                   std::optional<mode_t> fresh_mode = {});

  virtual ~RowAppender();
  RowAppender(const RowAppender&) = delete;
  RowAppender& operator=(const RowAppender&) = delete;

  // Adds `rows` formatted rows, each with its line end, to the pending buffer (the count is
  // the caller's: a quoted cell may hold a line break). False (and the rows counted as
  // dropped) when the appender is closed.
  bool append_rows(std::string_view text, std::uint64_t rows);

  // Counts a row the caller would not format (a non-finite value, an empty name) as
  // dropped, keeping `why` as the last error.
  void refuse(std::string why);

  // Hands the pending rows to the OS (write(2), no fsync). On failure (disk full, I/O
  // error) the complete rows that did get written are kept, the partial row after them is
  // truncated away, and the rest are dropped and counted. Should the truncation itself fail,
  // the next flush tries it again before writing; only when that fails too is the partial
  // line terminated, so that it reads as one malformed row and later rows stay whole.
  bool flush();

  // Flushes and closes. Later appends fail. Returns false when the flush or close failed.
  bool close();

  // Whether the path still names the open file (see SamplesFileChange). `none` too when
  // the path cannot be examined for another reason (the error is not a change).
  SamplesFileChange check_path() const;

  // Closes the open file and opens the path again as open() does (creating it with the
  // header when it is missing), keeping the pending rows and the counters. On failure the
  // appender is left closed, its pending rows still pending (see discard_pending).
  Status reopen();

  // Drops the pending rows, counting them as dropped; returns how many there were.
  std::uint64_t discard_pending();

  bool is_open() const { return fd_ >= 0; }
  std::uint64_t pending_rows() const { return pending_rows_; }
  std::uint64_t rows_written() const { return rows_written_; }
  std::uint64_t rows_dropped() const { return rows_dropped_; }  // refused or lost in a write
  std::uint64_t write_errors() const { return write_errors_; }
  // Rows written to the file now open (since open or the last reopen).
  std::uint64_t rows_in_file() const { return rows_in_file_; }
  const std::string& last_error() const { return last_error_; }
  int last_errno() const { return last_errno_; }  // of the latest failed system call, or 0
  const std::string& path() const { return path_; }
  const std::string& header() const { return header_; }

 protected:
  RowAppender(std::string path, std::string header);
  Status open_fd(int extra_flags = 0);  // opens path_ and checks or writes the header

 private:
  Status start();
  Status cut_partial_tail(off_t size);
  bool write_all(std::string_view bytes, std::size_t* written);
  bool repair_tail();
  Error fail(const char* what);  // records errno and its text, which the Error holds too

  std::string path_;
  std::string header_;
  mode_t mode_ = 0644;
  bool whole_flushes_ = false;  // a failed flush keeps none of its rows
  int fd_ = -1;
  off_t end_ = 0;                   // file size after our last write: the last whole row's end
  std::optional<off_t> repair_to_;  // a failed write's partial row still to truncate away
  bool needs_line_break_ = false;   // the file ends inside a line that could not be cut off
  std::string pending_;
  std::uint64_t pending_rows_ = 0;
  std::uint64_t rows_written_ = 0;
  std::uint64_t rows_dropped_ = 0;
  std::uint64_t write_errors_ = 0;
  std::uint64_t rows_in_file_ = 0;
  std::string last_error_;
  int last_errno_ = 0;
};

}  // namespace cpupower::artifacts
