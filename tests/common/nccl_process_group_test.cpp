// nccl_process_group_test.cpp: the `nccl` backend, through make_process_group("nccl").
//
// On a GPU machine: every operation of the interface at world size 1 (and at world
// 2..4 when the machine has that many GPUs, one thread per rank, one GPU each) against
// serial answers computed on the host from rank- and index-dependent inputs, the argument
// checks, host memory staged through the GPU, and the watchdog turning a missing rank into
// a TimeoutError. Without a GPU those report "skipped: no CUDA device".
//
// Everywhere (these run on the CPU): the factory's error without NCCL or without a GPU,
// backend_choices(), and check_backend_device() refusing CUDA tensors on tcp and gloo.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../support/nccl_skip.h"
#include "error.h"
#include "process_group_factory.h"
#include "store.h"
#include "tensor.h"

namespace course {
namespace {

using test::build_has_nccl;

using namespace std::chrono_literals;

const std::string kToken = "nccl-test-token";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- on the CPU -------------------------------------------------------------------------

TEST(NcclFactory, BackendChoicesListTheCpuBackendsThenNcclWhereBuilt) {
  const std::vector<std::string> choices = backend_choices();
  ASSERT_FALSE(choices.empty());
  EXPECT_EQ(choices.front(), "tcp");
#ifdef COURSE_HAVE_NCCL
  EXPECT_EQ(choices.back(), "nccl");
#else
  EXPECT_FALSE(build_has_nccl());
#endif
  for (const std::string& b : available_backends()) EXPECT_NE(b, "nccl");  // host memory only
  EXPECT_TRUE(contains(backend_choices_str(), "tcp"));
}

TEST(NcclFactory, WithoutNcclOrAGpuTheBackendIsAClearConfigError) {
  if (cuda_available() && build_has_nccl()) GTEST_SKIP() << "this machine can run nccl";
  StoreServer server("127.0.0.1", 0, kToken);
  StoreClient store("127.0.0.1", server.port(), 0, kToken, 5s);
  GroupRecipe recipe;
  recipe.timeout = 5s;
  try {
    make_process_group("nccl", store, 0, 1, recipe);
    FAIL() << "make_process_group(nccl) succeeded without NCCL or a GPU";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
#ifdef COURSE_HAVE_NCCL
    EXPECT_TRUE(contains(what, "GPU")) << what;  // built with NCCL: the GPU is what is missing
#else
    EXPECT_TRUE(contains(what, "no CUDA") || contains(what, "no NCCL")) << what;
#endif
    EXPECT_TRUE(contains(what, "--backend tcp") || contains(what, "--device cpu")) << what;
  }
}

TEST(NcclFactory, AnUnknownBackendListsWhatThisBuildHas) {
  StoreServer server("127.0.0.1", 0, kToken);
  StoreClient store("127.0.0.1", server.port(), 0, kToken, 5s);
  try {
    make_process_group("mpi", store, 0, 1, GroupRecipe{});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), backend_choices_str())) << e.what();
  }
}

TEST(NcclFactory, CudaTensorsOnTcpOrGlooAreRefusedNamingNccl) {
  for (const std::string backend : {"tcp", "gloo"}) {
    try {
      check_backend_device(backend, "cuda");
      FAIL() << backend << " accepted CUDA tensors";
    } catch (const ConfigError& e) {
      EXPECT_TRUE(contains(e.what(), "--backend nccl")) << e.what();
    }
    EXPECT_NO_THROW(check_backend_device(backend, "cpu"));
  }
  EXPECT_THROW(check_backend_device("tcp", "tpu"), ConfigError);
}

TEST(NcclFactory, CpuTensorsOnNcclAreRefusedNamingDeviceCuda) {
  try {
    check_backend_device("nccl", "cpu");
    FAIL() << "nccl accepted CPU tensors";
  } catch (const ConfigError& e) {
#ifdef COURSE_HAVE_NCCL
    EXPECT_TRUE(contains(e.what(), "--device cuda")) << e.what();
#else
    EXPECT_TRUE(contains(e.what(), "no CUDA") || contains(e.what(), "no NCCL")) << e.what();
#endif
  }
#ifdef COURSE_HAVE_NCCL
  EXPECT_NO_THROW(check_backend_device("nccl", "cuda"));
#else
  EXPECT_THROW(check_backend_device("nccl", "cuda"), ConfigError);
#endif
}

// ---- on GPUs ------------------------------------------------------------------------------

// Runs body(pg, rank) on `world` ranks, one thread and one GPU each, over one store.
void run_ranks(int world, Millis timeout,
               const std::function<void(ProcessGroup& pg, int rank)>& body) {
  StoreServer server("127.0.0.1", 0, kToken);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        StoreClient store("127.0.0.1", server.port(), r, kToken, 10s);
        cuda_set_device(r);
        GroupRecipe recipe;
        recipe.name = "test";
        recipe.device = r;
        recipe.timeout = timeout;
        auto pg = make_process_group("nccl", store, r, world, recipe);
        body(*pg, r);
      } catch (const std::exception& e) {
        failures[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

// Rank r's input: element i is 100 * (r + 1) + i (distinct per rank and index).
Tensor rank_input(int rank, int64_t n) {
  Tensor t = Tensor::empty({n});
  for (int64_t i = 0; i < n; ++i) t.data()[i] = static_cast<float>(100 * (rank + 1) + i);
  return t.to(Device::cuda);
}

std::vector<float> host_input(int rank, int64_t n) {
  return rank_input(rank, n).to_vector();
}

// Every operation against serial answers, at `world` ranks.
void check_every_op(int world) {
  constexpr int64_t k = 5;
  run_ranks(world, 60s, [world](ProcessGroup& pg, int r) {
    ASSERT_EQ(pg.backend(), "nccl");
    ASSERT_EQ(pg.size(), world);
    ASSERT_EQ(pg.rank(), r);
    // all_reduce (sum, max, avg) and the async one
    for (ReduceOp op : {ReduceOp::SUM, ReduceOp::MAX, ReduceOp::AVG, ReduceOp::MIN}) {
      Tensor t = rank_input(r, k);
      pg.all_reduce(t.device_span(), op);
      std::vector<float> want(k);
      for (int64_t i = 0; i < k; ++i) {
        float acc = host_input(0, k)[i];
        for (int q = 1; q < world; ++q) {
          const float v = host_input(q, k)[i];
          acc = op == ReduceOp::MAX   ? std::max(acc, v)
                : op == ReduceOp::MIN ? std::min(acc, v)
                                      : acc + v;
        }
        want[i] = op == ReduceOp::AVG ? acc / world : acc;
      }
      EXPECT_EQ(t.to_vector(), want) << reduce_op_name(op);
    }
    Tensor a = rank_input(r, k);
    pg.all_reduce_async(a.device_span(), ReduceOp::SUM)->wait(30s);
    float s0 = 0;
    for (int q = 0; q < world; ++q) s0 += host_input(q, k)[0];
    EXPECT_EQ(a.to_vector()[0], s0);
    Tensor on_host = rank_input(r, k).to(Device::cpu);  // staged through the GPU
    pg.all_reduce(on_host.span(), ReduceOp::SUM);
    EXPECT_EQ(on_host.to_vector()[0], s0);
    // broadcast from the last rank
    Tensor b = rank_input(r, k);
    pg.broadcast(b.device_span(), world - 1);
    EXPECT_EQ(b.to_vector(), host_input(world - 1, k));
    // reduce to rank 0
    Tensor red = rank_input(r, k);
    pg.reduce(red.device_span(), ReduceOp::SUM, 0);
    if (r == 0) {
      EXPECT_EQ(red.to_vector()[0], s0);
    }
    // all_gather, gather to the last rank
    Tensor in = rank_input(r, k), out = Tensor::zeros({world * k}, Device::cuda);
    pg.all_gather(in.device_span(), out.device_span());
    std::vector<float> gathered;
    for (int q = 0; q < world; ++q) {
      const auto v = host_input(q, k);
      gathered.insert(gathered.end(), v.begin(), v.end());
    }
    EXPECT_EQ(out.to_vector(), gathered);
    Tensor g = Tensor::zeros({world * k}, Device::cuda);
    pg.gather(in.device_span(), g.device_span(), world - 1);
    if (r == world - 1) {
      EXPECT_EQ(g.to_vector(), gathered);
    }
    // scatter from rank 0: rank r gets slice r of rank 0's input
    Tensor whole = rank_input(0, world * k), part = Tensor::zeros({k}, Device::cuda);
    pg.scatter(whole.device_span(), part.device_span(), 0);
    EXPECT_EQ(part.to_vector(), whole.rows(r * k, k).to_vector());
    // reduce_scatter: slice r of the sum of every rank's input
    Tensor rs_in = rank_input(r, world * k), rs_out = Tensor::zeros({k}, Device::cuda);
    pg.reduce_scatter(rs_in.device_span(), rs_out.device_span(), ReduceOp::SUM);
    std::vector<float> rs_want(k, 0.0f);
    for (int q = 0; q < world; ++q) {
      const auto v = host_input(q, world * k);
      for (int64_t i = 0; i < k; ++i) rs_want[i] += v[r * k + i];
    }
    EXPECT_EQ(rs_out.to_vector(), rs_want);
    // all_to_all: slice j of rank r's input becomes slice r of rank j's output
    Tensor aa_in = rank_input(r, world * k), aa_out = Tensor::zeros({world * k}, Device::cuda);
    pg.all_to_all(aa_in.device_span(), aa_out.device_span());
    std::vector<float> aa_want;
    for (int q = 0; q < world; ++q) {
      const auto v = host_input(q, world * k);
      aa_want.insert(aa_want.end(), v.begin() + r * k, v.begin() + (r + 1) * k);
    }
    EXPECT_EQ(aa_out.to_vector(), aa_want);
    // point to point around a ring, when there is a peer
    if (world > 1) {
      Tensor msg = rank_input(r, k), got = Tensor::zeros({k}, Device::cuda);
      auto sent = pg.isend(msg.device_span(), (r + 1) % world, 3);
      pg.recv(got.device_span(), (r + world - 1) % world, 3);
      sent->wait(30s);
      EXPECT_EQ(got.to_vector(), host_input((r + world - 1) % world, k));
    }
    pg.barrier();
    // empty buffers are no-ops
    pg.all_reduce(std::span<float>(), ReduceOp::SUM);
  });
}

TEST(NcclProcessGroup, EveryOpAtWorldSizeOne) {
  SKIP_WITHOUT_NCCL_GPU();
  check_every_op(1);
}

TEST(NcclProcessGroup, EveryOpOnEveryGpuOfThisMachine) {
  SKIP_WITHOUT_NCCL_GPU();
  const int gpus = std::min(cuda_device_count(), 4);
  if (gpus < 2) GTEST_SKIP() << "skipped: one GPU (NCCL runs one rank per GPU)";
  check_every_op(gpus);
}

TEST(NcclProcessGroup, HostMemoryIsStagedAndBadArgumentsAreRefused) {
  SKIP_WITHOUT_NCCL_GPU();
  run_ranks(1, 30s, [](ProcessGroup& pg, int) {
    // Host memory goes through a device copy and comes back, also from an async call.
    Tensor host = Tensor::from_vector({3}, {1.5f, -2.0f, 7.0f});
    pg.all_reduce(host.span(), ReduceOp::MAX);
    EXPECT_EQ(host.to_vector(), (std::vector<float>{1.5f, -2.0f, 7.0f}));
    Tensor gathered = Tensor::zeros({3});
    pg.all_gather(host.span(), gathered.span());
    EXPECT_EQ(gathered.to_vector(), host.to_vector());
    Tensor on_device = Tensor::zeros({3}, Device::cuda), back = Tensor::zeros({3});
    pg.all_gather(host.span(), on_device.device_span());  // host in, device out
    EXPECT_EQ(on_device.to_vector(), host.to_vector());
    pg.all_gather(on_device.device_span(), back.span());  // device in, host out
    EXPECT_EQ(back.to_vector(), host.to_vector());
    Tensor scaled = Tensor::from_vector({2}, {4.0f, 8.0f});
    pg.all_reduce_async(scaled.span(), ReduceOp::AVG)->wait(10s);
    EXPECT_EQ(scaled.to_vector(), (std::vector<float>{4.0f, 8.0f}));
    Tensor dev = Tensor::zeros({4}, Device::cuda), out = Tensor::zeros({3}, Device::cuda);
    EXPECT_THROW(pg.broadcast(dev.device_span(), 1), ConfigError);  // root outside the world
    EXPECT_THROW(pg.all_gather(dev.device_span(), out.device_span()), ConfigError);
    EXPECT_THROW(pg.reduce_scatter(dev.device_span(), out.device_span(), ReduceOp::SUM),
                 ConfigError);
    EXPECT_THROW(pg.isend(dev.device_span(), 0), ConfigError);  // no peer in a world of one
    pg.barrier();  // the group is still healthy after refused calls
  });
}

TEST(NcclProcessGroup, TheWatchdogTurnsAMissingRankIntoATimeoutError) {
  SKIP_WITHOUT_NCCL_GPU();
  if (cuda_device_count() < 2) GTEST_SKIP() << "skipped: needs two GPUs (one rank per GPU)";
  std::atomic<bool> rank0_done{false};
  run_ranks(2, 2s, [&rank0_done](ProcessGroup& pg, int r) {
    if (r == 1) {  // never calls the all_reduce; stays alive until rank 0 has given up
      while (!rank0_done) std::this_thread::sleep_for(10ms);
      return;
    }
    Tensor t = Tensor::full({8}, 1.0f, Device::cuda);
    const auto start = std::chrono::steady_clock::now();
    try {
      pg.all_reduce(t.device_span(), ReduceOp::SUM);
      ADD_FAILURE() << "all_reduce returned without rank 1";
    } catch (const TimeoutError& e) {
      EXPECT_TRUE(contains(e.what(), "all_reduce")) << e.what();
      EXPECT_TRUE(contains(e.what(), "rank 0")) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
    EXPECT_THROW(pg.barrier(), NetworkError);  // every later call fails at once
    rank0_done = true;
  });
}

}  // namespace
}  // namespace course
