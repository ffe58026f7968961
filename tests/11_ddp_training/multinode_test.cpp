// multinode_test.cpp: lesson 11 on two "machines": two launchers (`launch --nnodes 2
// --node-rank i --master-addr ...`), each starting one rank of ./lesson11, first over
// loopback, then from two network namespaces joined by a veth pair, so that every byte
// crosses a real network interface (root only; skipped with the reason elsewhere).
//
// The programs are the build's own launch (tools/launch/) and lesson11, found next to this test
// binary (`make test` builds them; run `cmake --build build/solutions --target launch
// lesson11` before running this file alone).
//
//   ./build/solutions/test_11 --gtest_filter='MultiNode*'
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

namespace fs = std::filesystem;

fs::path build_dir() {
  return fs::read_symlink("/proc/self/exe").parent_path();
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Small and quick; --target 0: the check is that the two nodes form one job.
std::string program_args(const std::string& run_dir) {
  return " --limit 640 --hidden 16 --batch-size 32 --epochs 2 --target 0 --run-dir " + run_dir;
}

// Below Linux's ephemeral range (32768-60999 by default), where the connections of the tests
// running beside this one take their local ports: a port there may be in use by the time
// the store binds it.
int port_for_test(int offset) {
  return 10000 + static_cast<int>(::getpid() % 20000) + offset;
}

struct Programs {
  std::string launch, lesson;
  bool found() const { return fs::exists(launch) && fs::exists(lesson); }
};

Programs programs() {
  return {(build_dir() / "launch").string(), (build_dir() / "lesson11").string()};
}

// Both nodes' logs end with the same PASS verdict on 2 ranks.
void expect_one_job(const std::string& node0, const std::string& node1) {
  EXPECT_NE(node0.find("[rank 0] lesson11: PASS"), std::string::npos) << node0;
  EXPECT_NE(node1.find("[rank 1] lesson11: PASS"), std::string::npos) << node1;
  EXPECT_NE(node0.find("on 2 rank(s)"), std::string::npos) << node0;
  EXPECT_NE(node0.find("parameters"), std::string::npos) << node0;
}

TEST(MultiNodeTest, TwoLaunchersOverLoopbackFormOneJob) {
  const Programs p = programs();
  if (!p.found()) GTEST_SKIP() << "build the launch and lesson11 targets first: " << p.launch;
  const fs::path dir =
      fs::temp_directory_path() / ("course-l11-nodes-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string port = std::to_string(port_for_test(0));
  auto node = [&](int i) {
    return "timeout -k 5 60 " + p.launch + " --nnodes 2 --node-rank " + std::to_string(i) +
           " --master-addr 127.0.0.1 --master-port " + port + " -- " + p.lesson +
           program_args((dir / "run").string()) + " > " +
           (dir / ("node" + std::to_string(i))).string() + " 2>&1";
  };
  const int code =
      std::system(("(" + node(1) + ") & " + node(0) + "; rc=$?; wait; exit $rc").c_str());
  EXPECT_EQ(code, 0);
  expect_one_job(slurp(dir / "node0"), slurp(dir / "node1"));
  fs::remove_all(dir);
}

// Without a launcher: each rank started by hand with the variables torchrun sets, and with
// the ones Open MPI's mpirun sets (OMPI_COMM_WORLD_*; MASTER_ADDR/PORT from the user).
void run_by_hand(const std::string& rank_var, const std::string& size_var, int port_offset) {
  const Programs p = programs();
  if (!p.found()) GTEST_SKIP() << "build the lesson11 target first: " << p.lesson;
  const fs::path dir =
      fs::temp_directory_path() / ("course-l11-hand-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string port = std::to_string(port_for_test(port_offset));
  auto rank = [&](int i) {
    return rank_var + "=" + std::to_string(i) + " " + size_var +
           "=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " timeout -k 5 60 " + p.lesson +
           program_args((dir / "run").string()) + " > " +
           (dir / ("node" + std::to_string(i))).string() + " 2>&1";
  };
  const int code =
      std::system(("(" + rank(1) + ") & " + rank(0) + "; rc=$?; wait; exit $rc").c_str());
  EXPECT_EQ(code, 0);
  const std::string node0 = slurp(dir / "node0"), node1 = slurp(dir / "node1");
  EXPECT_NE(node0.find("lesson11: PASS"), std::string::npos) << node0;
  EXPECT_NE(node1.find("lesson11: PASS"), std::string::npos) << node1;
  EXPECT_NE(node0.find("on 2 rank(s)"), std::string::npos) << node0;
  fs::remove_all(dir);
}

TEST(MultiNodeTest, RanksStartedByHandWithTorchrunVariables) {
  run_by_hand("RANK", "WORLD_SIZE", 2);
}

TEST(MultiNodeTest, RanksStartedByHandWithOpenMpiVariables) {
  run_by_hand("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", 3);
}

// kill -9 of a rank mid-run (the driver's fault injection): the launcher stops the job
// within seconds, names the rank and the signal, and exits non-zero.
TEST(MultiNodeTest, LauncherStopsTheJobAndNamesAKilledRank) {
  const Programs p = programs();
  if (!p.found()) GTEST_SKIP() << "build the lesson11 target first: " << p.lesson;
  const fs::path dir =
      fs::temp_directory_path() / ("course-l11-killed-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto start = std::chrono::steady_clock::now();
  const int code =
      std::system(("timeout -k 5 60 " + p.lesson + " --np 2 --crash-at-step 15" +
                   program_args((dir / "run").string()) + " > " + (dir / "out").string() + " 2>&1")
                      .c_str());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string out = slurp(dir / "out");
  EXPECT_NE(code, 0) << out;
  EXPECT_NE(out.find("rank 1 was killed by signal 9 (SIGKILL)"), std::string::npos) << out;
  EXPECT_NE(out.find("epoch-0001.safetensors"), std::string::npos) << "epoch 1's checkpoint\n"
                                                                   << out;
  EXPECT_LT(seconds, 30) << out;
  fs::remove_all(dir);
}

// Two namespaces, l11<pid>a and l11<pid>b, with 10.211.<k>.1 and .2 on the two ends of a
// veth pair; removed whatever happens.
TEST(MultiNodeTest, TwoNamespacesOverAVethPairFormOneJob) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces (run as root)";
  if (std::system("command -v ip >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs iproute2 (ip)";
  const Programs p = programs();
  if (!p.found()) GTEST_SKIP() << "build the launch and lesson11 targets first: " << p.launch;
  const std::string n = "l11" + std::to_string(::getpid() % 100000);
  const std::string a = n + "a", b = n + "b", net = "10.211." + std::to_string(::getpid() % 250);
  const fs::path dir =
      fs::temp_directory_path() / ("course-l11-veth-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string setup =
      "ip netns add " + a + " && ip netns add " + b + " && ip link add " + n +
      "x type veth peer name " + n + "y && ip link set " + n + "x netns " + a + " && ip link set " +
      n + "y netns " + b + " && ip -n " + a + " addr add " + net + ".1/24 dev " + n +
      "x && ip -n " + b + " addr add " + net + ".2/24 dev " + n + "y && ip -n " + a + " link set " +
      n + "x up && ip -n " + b + " link set " + n + "y up && ip -n " + a +
      " link set lo up && ip -n " + b + " link set lo up";
  const std::string cleanup =
      "ip netns del " + a + " 2>/dev/null; ip netns del " + b + " 2>/dev/null; true";
  if (std::system(setup.c_str()) != 0) {
    std::system(cleanup.c_str());
    GTEST_SKIP() << "could not create namespaces and a veth pair (a container without "
                    "CAP_NET_ADMIN?)";
  }
  const std::string port = std::to_string(port_for_test(1));
  auto node = [&](int i, const std::string& ns) {
    const std::string me = net + "." + std::to_string(i + 1);
    return "COURSE_ADVERTISE_ADDR=" + me + " timeout -k 5 60 ip netns exec " + ns + " " + p.launch +
           " --nnodes 2 --node-rank " + std::to_string(i) + " --master-addr " + net +
           ".1 --master-port " + port + " -- " + p.lesson + program_args((dir / "run").string()) +
           " > " + (dir / ("node" + std::to_string(i))).string() + " 2>&1";
  };
  const int code =
      std::system(("(" + node(1, b) + ") & " + node(0, a) + "; rc=$?; wait; exit $rc").c_str());
  // The bytes went through the veth interface: its receive counter on node 0's side.
  const std::string stats = dir / "stats";
  std::system(("ip -n " + a + " -s link show " + n + "x > " + stats + " 2>&1").c_str());
  std::system(cleanup.c_str());
  EXPECT_EQ(code, 0);
  expect_one_job(slurp(dir / "node0"), slurp(dir / "node1"));
  const std::string s = slurp(stats);
  unsigned long long rx_bytes = 0;
  const auto at = s.find("RX:");
  if (at != std::string::npos) {
    const auto line = s.find('\n', at);
    std::sscanf(s.c_str() + line + 1, "%llu", &rx_bytes);
  }
  EXPECT_GT(rx_bytes, 100000u) << "node 0's veth end received too little:\n" << s;
  fs::remove_all(dir);
}

}  // namespace
