// rank_output.cpp: whole lines from a rank's pipes, prefixed (see rank_output.h).
#include "rank_output.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>

namespace course {
namespace {
constexpr size_t kMaxLine = 1 << 20;  // a "line" longer than this is printed in pieces
std::atomic<uint64_t> g_verdicts{0};  // verdict lines seen so far, for their arrival order
}  // namespace

bool is_verdict_line(const std::string& line) {
  size_t at = 6;  // after "lesson"
  if (line.rfind("lesson", 0) != 0) return false;
  while (at < line.size() && std::isdigit(static_cast<unsigned char>(line[at]))) ++at;
  if (at == 6) return false;
  for (const char* verdict : {": PASS", ": FAIL", ": TODO"}) {
    if (line.compare(at, 6, verdict) == 0) return true;
  }
  return false;
}

void write_out(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t k = ::write(fd, text.data() + done, text.size() - done);
    if (k > 0) {
      done += static_cast<size_t>(k);
    } else if (k < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 100);
    } else if (!(k < 0 && errno == EINTR)) {
      return;
    }
  }
}

void RankOutput::emit_lines(int stream, bool prefix, bool flush) {
  std::string& buf = pending[stream];
  std::string out;
  size_t start = 0;
  while (true) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) {
      if (!flush && buf.size() - start < kMaxLine) break;
      if (start == buf.size()) break;
      nl = buf.size();  // the unterminated tail: print it as a line of its own
    }
    const std::string line = buf.substr(start, nl - start);
    if (is_verdict_line(line)) {
      last_verdict = line;
      verdict_seq = ++g_verdicts;
    }
    if (prefix) out += "[rank " + std::to_string(rank) + "] ";
    out += line + "\n";
    start = std::min(nl + 1, buf.size());
  }
  buf.erase(0, start);
  if (!out.empty()) write_out(stream == 0 ? STDOUT_FILENO : STDERR_FILENO, out);
}

void RankOutput::drain(int stream, bool prefix) {
  char chunk[65536];
  while (fds[stream] >= 0) {
    const ssize_t k = ::read(fds[stream], chunk, sizeof(chunk));
    if (k > 0) {
      pending[stream].append(chunk, static_cast<size_t>(k));
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) break;
    ::close(fds[stream]);  // end of file (or a broken pipe): the stream is over
    fds[stream] = -1;
    emit_lines(stream, prefix, /*flush=*/true);
    return;
  }
  emit_lines(stream, prefix, /*flush=*/false);
}

void RankOutput::flush(int stream, bool prefix) {
  emit_lines(stream, prefix, /*flush=*/true);
}

void RankOutput::close() {
  for (int& fd : fds) {
    if (fd >= 0) ::close(fd), fd = -1;
  }
}

}  // namespace course
