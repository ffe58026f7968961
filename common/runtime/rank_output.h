// rank_output.h: the launcher's relay of one rank's stdout and stderr (launcher.cpp).
//
// A rank writes into two pipes; the launcher reads whatever is there whenever poll() says
// so, cuts it into whole lines, and prints each with "[rank r] " in front, so the lines of
// eight ranks never interleave mid-line. It remembers the rank's last verdict line
// ("lessonNN: PASS|FAIL|TODO ...") and when it arrived, which is how the launcher tells
// the first error from its consequences.
//
// What this is not: a log collector; nothing is kept but the last verdict.
//
// Thread safety: used by the launcher's one thread.
#pragma once

#include <cstdint>
#include <string>

namespace course {

/// One rank's two output pipes and what has been read from them.
struct RankOutput {
  int rank = -1;             ///< the global rank, for the prefix
  int fds[2] = {-1, -1};     ///< read ends of the stdout and stderr pipes (-1: closed)
  std::string pending[2];    ///< bytes after the last newline, per stream
  std::string last_verdict;  ///< the last "lessonNN: ..." line seen
  uint64_t verdict_seq = 0;  ///< when it arrived: 1 + lines of verdicts before it, launch-wide

  /// Reads whatever stream `stream` (0 stdout, 1 stderr) holds now and prints its whole
  /// lines; closes the pipe at end of file and prints the unterminated tail.
  void drain(int stream, bool prefix);
  /// Prints everything still pending on `stream`, even an unterminated last line.
  void flush(int stream, bool prefix);
  /// Closes both pipes.
  void close();

 private:
  void emit_lines(int stream, bool prefix, bool flush);
};

/// True for a driver's verdict line: "lessonNN: PASS ...", "... FAIL ...", "... TODO ...".
bool is_verdict_line(const std::string& line);

/// Writes all of `text` to fd (the launcher's stdout or stderr); gives up quietly if the
/// reader is gone, since the ranks matter more than their echo.
void write_out(int fd, const std::string& text);

}  // namespace course
