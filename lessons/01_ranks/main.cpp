// main.cpp: ./lesson01, ranks and the full mesh.
//
//   make lesson01 && ./lesson01 --np 4
//
// Every rank says hello (rank, local rank, node, pid, host), checks the rank arithmetic of
// ranks.h against what the launcher told it, connects the full mesh of full_mesh.h, and
// exchanges one value with every peer: rank r sends 1000*r + peer to each peer and expects
// 1000*peer + r back. The verdict is PASS only if every rank got every value right.
#include <unistd.h>

#include <iostream>
#include <sstream>

#include "driver.h"
#include "full_mesh.h"
#include "handshake.h"
#include "ranks.h"
#include "socket.h"

namespace {

course::Verdict run_rank(course::DriverContext& ctx) {
  const course::DistEnv& env = ctx.env();
  const int rank = env.rank;
  const int world = env.world_size;
  if (world % env.local_world_size != 0) {
    return course::Verdict::fail("WORLD_SIZE " + std::to_string(world) +
                                 " is not a multiple of LOCAL_WORLD_SIZE " +
                                 std::to_string(env.local_world_size));
  }
  const course::NodeLayout layout{world / env.local_world_size, env.local_world_size};
  const int node = course::node_of(layout, rank);
  std::ostringstream hello;
  hello << "hello from rank " << rank << " of " << course::world_size(layout) << ": local rank "
        << course::local_rank_of(layout, rank) << " on node " << node << ", pid " << getpid()
        << ", host " << course::host_name();
  std::cout << hello.str() << std::endl;

  if (course::local_rank_of(layout, rank) != env.local_rank ||
      course::global_rank(layout, node, env.local_rank) != rank ||
      course::world_size(layout) != world) {
    return course::Verdict::fail("rank arithmetic disagrees with the launcher: LOCAL_RANK=" +
                                 std::to_string(env.local_rank) + ", computed " +
                                 std::to_string(course::local_rank_of(layout, rank)));
  }

  course::Mesh mesh = course::connect_full_mesh(ctx.store(), rank, world, course::job_token(),
                                                ctx.advertise_host());
  // Small messages fit in the socket buffers, so sending to everyone before receiving
  // from anyone cannot deadlock.
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    const int64_t value = 1000 * rank + peer;
    mesh.to(peer).send_all(&value, sizeof(value));
  }
  int wrong = 0;
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    int64_t value = -1;
    mesh.to(peer).recv_all(&value, sizeof(value));
    if (value != 1000 * peer + rank) {
      std::cout << "from rank " << peer << ": got " << value << ", expected " << 1000 * peer + rank
                << std::endl;
      ++wrong;
    }
  }
  if (wrong > 0) return course::Verdict::fail(std::to_string(wrong) + " peer value(s) wrong");
  return course::Verdict::pass("full mesh verified: " + std::to_string(world - 1) +
                               " peer(s) each");
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson01";
  config.title = "ranks: world, global and local rank, rendezvous and the full mesh";
  config.default_np = 4;
  return course::run_driver(argc, argv, config, nullptr, run_rank);
}
