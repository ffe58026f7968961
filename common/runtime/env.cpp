// env.cpp: reading a rank's identity from its environment (see env.h).
//
// What this is not: a launcher. It only reads what torchrun, the course launcher, srun or
// mpirun have already set; launcher.h is what sets it.
#include "env.h"

#include <charconv>
#include <cstdlib>

#include "error.h"

namespace course {
namespace {

/// Where the rank and world size came from, and how to name their variables.
struct Scheme {
  const char* source;
  const char* rank;
  const char* world_size;
  const char* local_rank;
  const char* local_world_size;
};

constexpr Scheme kTorchrun{"env", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
constexpr Scheme kSlurm{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
                        "SLURM_NTASKS_PER_NODE"};
constexpr Scheme kOpenMpi{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                          "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};

bool is_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

/// Parses the leading integer of `text`. Slurm writes per-node counts like "4(x2)" or "4,2";
/// for those `allow_suffix` takes the first number.
bool parse_int(const std::string& text, int& out, bool allow_suffix = false) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, out);
  return ec == std::errc() && ptr != begin && (ptr == end || allow_suffix);
}

/// The integer in variable `name`. Throws ConfigError when it is missing (and has no
/// fallback) or is not a number.
int read_int(const char* name, const std::string& how_to_set, const int* fallback = nullptr,
             bool allow_suffix = false) {
  const std::string text = env_or(name, "");
  if (text.empty()) {
    if (fallback != nullptr) return *fallback;
    throw ConfigError(std::string(name) + " is not set: " + how_to_set);
  }
  int value = 0;
  if (!parse_int(text, value, allow_suffix)) {
    throw ConfigError(std::string(name) + "='" + text + "' is not an integer: " + how_to_set);
  }
  return value;
}

/// How to set MASTER_ADDR, worded for where the rank was started.
std::string master_addr_hint(const Scheme& scheme) {
  if (&scheme == &kSlurm) {
    return "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1) "
           "in the batch script";
  }
  if (&scheme == &kOpenMpi) {
    return "pass mpirun -x MASTER_ADDR=<rank 0's host>";
  }
  return "export MASTER_ADDR=<rank 0's host> (or run without RANK to let the driver launch "
         "all ranks)";
}

/// How to set MASTER_PORT, worded for where the rank was started.
std::string master_port_hint(const Scheme& scheme) {
  std::string hint =
      &scheme == &kOpenMpi ? "pass mpirun -x MASTER_PORT=29500" : "export MASTER_PORT=29500";
  hint += " (any free port, the same on every rank)";
  return hint;
}

}  // namespace

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

bool started_as_rank() {
  return is_set(kTorchrun.rank) || is_set(kSlurm.rank) || is_set(kOpenMpi.rank);
}

/// The first scheme whose rank variable is set.
static const Scheme& pick_scheme() {
  for (const Scheme* scheme : {&kTorchrun, &kSlurm, &kOpenMpi}) {
    if (is_set(scheme->rank)) return *scheme;
  }
  throw ConfigError(
      "RANK is not set: export RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (or run without "
      "RANK to let the driver launch all ranks)");
}

DistEnv read_dist_env() {
  const Scheme& scheme = pick_scheme();
  DistEnv env;
  env.source = scheme.source;
  const std::string same = " (the same on every rank)";
  env.world_size = read_int(
      scheme.world_size, "export " + std::string(scheme.world_size) + "=<number of ranks>" + same);
  env.rank = read_int(scheme.rank, "export " + std::string(scheme.rank) + "=<0..world-1>");
  env.local_rank =
      read_int(scheme.local_rank,
               "export " + std::string(scheme.local_rank) + "=<rank on this node>", &env.rank);
  // Slurm sets SLURM_NTASKS_PER_NODE only under --ntasks-per-node; SLURM_TASKS_PER_NODE
  // ("4(x2)": 4 tasks on each of 2 nodes) is always there.
  int local_fallback = env.world_size;
  if (&scheme == &kSlurm) {
    local_fallback = read_int("SLURM_TASKS_PER_NODE", "", &local_fallback, true);
  }
  env.local_world_size =
      read_int(scheme.local_world_size,
               "export " + std::string(scheme.local_world_size) + "=<ranks on this node>",
               &local_fallback, /*allow_suffix=*/true);

  env.master_addr = env_or("MASTER_ADDR", "");
  if (env.master_addr.empty()) {
    throw ConfigError("MASTER_ADDR is not set: " + master_addr_hint(scheme));
  }
  env.master_port = read_int("MASTER_PORT", master_port_hint(scheme));

  if (env.world_size < 1) {
    throw ConfigError(std::string(scheme.world_size) + "=" + std::to_string(env.world_size) +
                      " must be at least 1");
  }
  if (env.rank < 0 || env.rank >= env.world_size) {
    throw ConfigError(std::string(scheme.rank) + "=" + std::to_string(env.rank) +
                      " is outside 0.." + std::to_string(env.world_size - 1) + " (" +
                      scheme.world_size + "=" + std::to_string(env.world_size) + ")");
  }
  if (env.local_world_size < 1 || env.local_world_size > env.world_size) {
    throw ConfigError(std::string(scheme.local_world_size) + "=" +
                      std::to_string(env.local_world_size) + " must be in 1.." +
                      std::to_string(env.world_size));
  }
  if (env.local_rank < 0 || env.local_rank >= env.local_world_size) {
    throw ConfigError(std::string(scheme.local_rank) + "=" + std::to_string(env.local_rank) +
                      " is outside 0.." + std::to_string(env.local_world_size - 1) + " (" +
                      scheme.local_world_size + "=" + std::to_string(env.local_world_size) + ")");
  }
  if (env.master_port < 1 || env.master_port > 65535) {
    throw ConfigError("MASTER_PORT=" + std::to_string(env.master_port) +
                      " is not a TCP port: use 1024..65535");
  }
  return env;
}

std::string blas_coretype_for_cpu() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return "";
}

}  // namespace course
