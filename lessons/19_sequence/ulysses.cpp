// ulysses.cpp: lesson 19, the exercise's second part: Ulysses' two re-layouts, each one
// all_to_all (ulysses.h has the picture and the steps).
#include "ulysses.h"

#include <algorithm>
#include <string>
#include <vector>

#include "error.h"

namespace course {

namespace {

// The sizes of a re-layout: B, H heads in all, h = H/C a rank, L = S/C local tokens, S, d.
struct UlyssesDims {
  int64_t batch, heads, heads_here, local, seq, dim;
};

// Checks x (4-d, [B, H, S/C, d] when `sequence_sharded`, else [B, H/C, S, d]) and its
// sizes against the group; the dims of the re-layout.
UlyssesDims ulysses_dims(const Tensor& x, int cp, bool sequence_sharded, const char* function) {
  if (!x.defined() || x.dim() != 4) {
    throw ConfigError(std::string(function) + ": expected a 4-d tensor, got " +
                      (x.defined() ? shape_str(x.shape()) : std::string("undefined")));
  }
  UlyssesDims s{};
  s.batch = x.size(0);
  s.dim = x.size(3);
  if (sequence_sharded) {
    s.heads = x.size(1);
    s.local = x.size(2);
    s.seq = s.local * cp;
  } else {
    s.heads = x.size(1) * cp;
    s.seq = x.size(2);
    s.local = s.seq / cp;
  }
  check_ulysses_heads(s.heads, cp, function);
  check_sequence_split(s.seq, cp, function);
  s.heads_here = s.heads / cp;
  return s;
}

}  // namespace

Tensor ulysses_to_heads(const Tensor& x, ProcessGroup& cp, SequenceLayout layout) {
  const int world = cp.size();
  const UlyssesDims s = ulysses_dims(x, world, true, "ulysses_to_heads");
  std::vector<float> send(static_cast<size_t>(x.numel())), recv(send.size());
  Tensor y = Tensor::empty({s.batch, s.heads_here, s.seq, s.dim});
  // TODO(lesson19): slice j = x's heads [j h, (j+1) h); slice src's token i to its position
  COURSE_TODO();
  return y;
}

Tensor ulysses_to_sequence(const Tensor& y, ProcessGroup& cp, SequenceLayout layout) {
  const int world = cp.size();
  const UlyssesDims s = ulysses_dims(y, world, false, "ulysses_to_sequence");
  std::vector<float> send(static_cast<size_t>(y.numel())), recv(send.size());
  Tensor x = Tensor::empty({s.batch, s.heads, s.local, s.dim});
  // TODO(lesson19): slice j = rank j's tokens (token_positions) of y; slice src: heads of src
  COURSE_TODO();
  return x;
}

}  // namespace course
