// counting_group.h: lesson 19's tests: a ProcessGroup that forwards every call to another
// and counts the floats this rank sends, measured at the group's door (what the kernels
// say they sent is checked against it, and both against the cost model).
//
//   CountingGroup counted(*cp);
//   ring_attention_forward(counted, ...);
//   EXPECT_EQ(counted.floats_sent(), ring_attention_forward_floats(local, C));
//
// Counted: send and isend (the message), all_to_all ((N - 1)/N of the input: slice r
// stays). Any other call is forwarded and counted in other_calls(), which the tests
// expect to be 0: ring attention and Ulysses use nothing else.
#pragma once

#include <cstdint>
#include <string>

#include "process_group.h"

namespace course::test {

class CountingGroup final : public ProcessGroup {
 public:
  explicit CountingGroup(ProcessGroup& inner) : inner_(inner) {}
  int64_t floats_sent() const { return floats_sent_; }
  int64_t other_calls() const { return other_calls_; }
  void reset() { floats_sent_ = other_calls_ = 0; }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  void send(std::span<const float> data, int dst, int tag) override {
    floats_sent_ += static_cast<int64_t>(data.size());
    inner_.send(data, dst, tag);
  }
  void recv(std::span<float> data, int src, int tag) override { inner_.recv(data, src, tag); }
  WorkPtr isend(std::span<const float> data, int dst, int tag) override {
    floats_sent_ += static_cast<int64_t>(data.size());
    return inner_.isend(data, dst, tag);
  }
  WorkPtr irecv(std::span<float> data, int src, int tag) override {
    return inner_.irecv(data, src, tag);
  }
  void all_to_all(std::span<const float> input, std::span<float> output) override {
    floats_sent_ += static_cast<int64_t>(input.size()) / size() * (size() - 1);
    inner_.all_to_all(input, output);
  }
  void broadcast(std::span<float> data, int root) override {
    ++other_calls_;
    inner_.broadcast(data, root);
  }
  void scatter(std::span<const float> input, std::span<float> output, int root) override {
    ++other_calls_;
    inner_.scatter(input, output, root);
  }
  void gather(std::span<const float> input, std::span<float> output, int root) override {
    ++other_calls_;
    inner_.gather(input, output, root);
  }
  void barrier() override {
    ++other_calls_;
    inner_.barrier();
  }
  void reduce(std::span<float> data, ReduceOp op, int root) override {
    ++other_calls_;
    inner_.reduce(data, op, root);
  }
  void all_reduce(std::span<float> data, ReduceOp op) override {
    ++other_calls_;
    inner_.all_reduce(data, op);
  }
  void all_gather(std::span<const float> input, std::span<float> output) override {
    ++other_calls_;
    inner_.all_gather(input, output);
  }
  void reduce_scatter(std::span<const float> input, std::span<float> output, ReduceOp op) override {
    ++other_calls_;
    inner_.reduce_scatter(input, output, op);
  }
  WorkPtr all_reduce_async(std::span<float> data, ReduceOp op) override {
    ++other_calls_;
    return inner_.all_reduce_async(data, op);
  }
  WorkPtr reduce_scatter_async(std::span<const float> input, std::span<float> output,
                               ReduceOp op) override {
    ++other_calls_;
    return inner_.reduce_scatter_async(input, output, op);
  }
  WorkPtr all_gather_async(std::span<const float> input, std::span<float> output) override {
    ++other_calls_;
    return inner_.all_gather_async(input, output);
  }

 private:
  ProcessGroup& inner_;
  int64_t floats_sent_ = 0;
  int64_t other_calls_ = 0;
};

}  // namespace course::test
