// env_test.cpp: tests of common/runtime/env.h: torchrun, Slurm and Open MPI variables, and the
// one-line errors for what is missing or malformed.
// Run alone: ./build/<dir>/tests/common/test_common --gtest_filter='Env*'
#include "env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>

#include "error.h"

namespace course {
namespace {

/// Clears every variable env.h reads for the test and puts the old values back after.
class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }
  void set(const char* name, const char* value) { ::setenv(name, value, 1); }
  /// The ConfigError's message without the who() prefix.
  std::string config_error() {
    try {
      read_dist_env();
    } catch (const ConfigError& e) {
      return e.detail();
    }
    ADD_FAILURE() << "read_dist_env() accepted the environment";
    return "";
  }

 private:
  static constexpr const char* kNames[] = {"RANK",
                                           "WORLD_SIZE",
                                           "LOCAL_RANK",
                                           "LOCAL_WORLD_SIZE",
                                           "MASTER_ADDR",
                                           "MASTER_PORT",
                                           "SLURM_PROCID",
                                           "SLURM_NTASKS",
                                           "SLURM_LOCALID",
                                           "SLURM_NTASKS_PER_NODE",
                                           "SLURM_TASKS_PER_NODE",
                                           "OMPI_COMM_WORLD_RANK",
                                           "OMPI_COMM_WORLD_SIZE",
                                           "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "OMPI_COMM_WORLD_LOCAL_SIZE"};
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(EnvTest, TorchrunVariables) {
  EXPECT_FALSE(started_as_rank());
  set("RANK", "5");
  set("WORLD_SIZE", "6");
  set("LOCAL_RANK", "2");
  set("LOCAL_WORLD_SIZE", "3");
  set("MASTER_ADDR", "10.0.0.7");
  set("MASTER_PORT", "29500");
  EXPECT_TRUE(started_as_rank());
  const DistEnv env = read_dist_env();
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 6);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.local_world_size, 3);
  EXPECT_EQ(env.master_addr, "10.0.0.7");
  EXPECT_EQ(env.master_port, 29500);
  EXPECT_EQ(env.source, "env");
}

TEST_F(EnvTest, LocalRankDefaultsToOneNode) {
  set("RANK", "2");
  set("WORLD_SIZE", "3");
  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", "1234");
  const DistEnv env = read_dist_env();
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.local_world_size, 3);
}

TEST_F(EnvTest, SlurmVariables) {
  set("SLURM_PROCID", "6");
  set("SLURM_NTASKS", "8");
  set("SLURM_LOCALID", "2");
  set("SLURM_TASKS_PER_NODE", "4(x2)");
  set("MASTER_ADDR", "node01");
  set("MASTER_PORT", "29400");
  EXPECT_TRUE(started_as_rank());
  DistEnv env = read_dist_env();
  EXPECT_EQ(env.source, "slurm");
  EXPECT_EQ(env.rank, 6);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.local_world_size, 4);  // from "4(x2)"
  set("SLURM_NTASKS_PER_NODE", "4");
  env = read_dist_env();
  EXPECT_EQ(env.local_world_size, 4);
}

TEST_F(EnvTest, OpenMpiVariables) {
  set("OMPI_COMM_WORLD_RANK", "3");
  set("OMPI_COMM_WORLD_SIZE", "5");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  set("MASTER_ADDR", "head");
  set("MASTER_PORT", "29501");
  const DistEnv env = read_dist_env();
  EXPECT_EQ(env.source, "openmpi");
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 5);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.local_world_size, 2);
}

TEST_F(EnvTest, TorchrunVariablesWinOverSlurm) {
  set("RANK", "1");
  set("WORLD_SIZE", "2");
  set("SLURM_PROCID", "0");
  set("SLURM_NTASKS", "1");
  set("MASTER_ADDR", "a");
  set("MASTER_PORT", "2");
  const DistEnv env = read_dist_env();
  EXPECT_EQ(env.source, "env");
  EXPECT_EQ(env.rank, 1);
}

TEST_F(EnvTest, MissingMasterAddrNamesItAndHowToSetIt) {
  set("RANK", "0");
  set("WORLD_SIZE", "2");
  set("MASTER_PORT", "29500");
  const std::string message = config_error();
  EXPECT_EQ(message.rfind("MASTER_ADDR is not set: export MASTER_ADDR=", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line, please: " << message;
}

TEST_F(EnvTest, SlurmHintSaysHowToFindTheFirstNode) {
  set("SLURM_PROCID", "0");
  set("SLURM_NTASKS", "2");
  set("MASTER_PORT", "29500");
  EXPECT_NE(config_error().find("SLURM_JOB_NODELIST"), std::string::npos);
}

TEST_F(EnvTest, MissingOrMalformedVariablesAreNamed) {
  set("RANK", "0");
  set("MASTER_ADDR", "127.0.0.1");
  set("MASTER_PORT", "29500");
  EXPECT_EQ(config_error().rfind("WORLD_SIZE is not set", 0), 0u);
  set("WORLD_SIZE", "four");
  EXPECT_EQ(config_error().rfind("WORLD_SIZE='four' is not an integer", 0), 0u);
  set("WORLD_SIZE", "4");
  set("RANK", "4");
  EXPECT_NE(config_error().find("RANK=4 is outside 0..3"), std::string::npos);
  set("RANK", "3");
  set("MASTER_PORT", "70000");
  EXPECT_NE(config_error().find("MASTER_PORT=70000"), std::string::npos);
  ::unsetenv("MASTER_PORT");
  EXPECT_EQ(config_error().rfind("MASTER_PORT is not set", 0), 0u);
}

TEST_F(EnvTest, NoRankAtAllSaysHowToStart) {
  EXPECT_NE(config_error().find("RANK is not set"), std::string::npos);
}

TEST_F(EnvTest, EnvOrFallsBackWhenUnsetOrEmpty) {
  EXPECT_EQ(env_or("MASTER_ADDR", "fallback"), "fallback");
  set("MASTER_ADDR", "");
  EXPECT_EQ(env_or("MASTER_ADDR", "fallback"), "fallback");
  set("MASTER_ADDR", "host");
  EXPECT_EQ(env_or("MASTER_ADDR", "fallback"), "host");
}

}  // namespace
}  // namespace course
