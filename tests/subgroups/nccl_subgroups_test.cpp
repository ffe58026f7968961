// nccl_subgroups_test.cpp: new_group and init_device_mesh on the `nccl` backend: each
// group a communicator of its own, its unique id through the store (group_maker("nccl")).
//
// Ranks are threads of this process, one GPU each where there are enough (NCCL refuses two
// ranks of one communicator on one GPU; forked ranks could not use CUDA initialised
// before the fork), as tests/common/nccl_process_group_test.cpp does. Host buffers are
// staged through the GPU by the backend, so group_checks.h's checks run unchanged.
// Without a GPU (or without NCCL in the build) they report "skipped: ...".
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../support/nccl_skip.h"
#include "device_mesh.h"
#include "group_checks.h"
#include "process_group_factory.h"
#include "store.h"
#include "tensor_kernels.h"

namespace course::test {
namespace {

using namespace std::chrono_literals;

const std::string kToken = "nccl-subgroups-token";

// Runs body(world_groups, rank) on `world` threads over one store; rank r's groups live on
// GPU r % gpus.
void run_thread_ranks(int world, int gpus,
                      const std::function<void(Subgroups& world_groups, int rank)>& body) {
  StoreServer server("127.0.0.1", 0, kToken);
  std::vector<std::thread> threads;
  std::vector<std::string> failures(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        StoreClient store("127.0.0.1", server.port(), r, kToken, 10s);
        cuda_set_device(r % gpus);
        GroupRecipe recipe;
        recipe.name = "nccl-subgroups";
        recipe.device = r % gpus;
        recipe.timeout = 30s;
        Subgroups world_groups(store, r, world, group_maker("nccl", recipe), "subgroups", 30s);
        body(world_groups, r);
      } catch (const std::exception& e) {
        failures[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

// Groups of one need one GPU for any number of ranks: four ranks, each alone in its group.
TEST(NcclSubgroups, GroupsOfOne) {
  SKIP_WITHOUT_NCCL_GPU();
  run_thread_ranks(4, cuda_device_count(), [](Subgroups& world_groups, int rank) {
    for (int r = 0; r < world_groups.world(); ++r) {
      auto alone = world_groups.new_group({r});
      if (alone) exercise_group(*alone, {r}, rank, 1, "nccl group of one " + format_ranks({r}));
    }
  });
}

// A dp x tp mesh over the machine's GPUs (4 or more, an even number up to 8).
TEST(NcclSubgroups, MeshOnEveryGpu) {
  SKIP_WITHOUT_NCCL_GPU();
  const int gpus = std::min(cuda_device_count(), 8) / 2 * 2;
  if (gpus < 4) GTEST_SKIP() << "skipped: needs 4 GPUs (NCCL runs one rank per GPU)";
  run_thread_ranks(gpus, gpus, [gpus](Subgroups& world_groups, int rank) {
    const DeviceMesh mesh = init_device_mesh(world_groups, {{"dp", gpus / 2}, {"tp", 2}});
    int salt = 0;
    for (const char* dim : {"tp", "dp"}) {
      exercise_group(*mesh.group(dim), mesh.group_ranks(dim), rank, salt++,
                     std::string("nccl ") + dim);
    }
  });
}

}  // namespace
}  // namespace course::test
