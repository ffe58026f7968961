// env.h: where a rank learns who it is (the env:// convention of torch.distributed).
//
// Read, in order of preference:
//   torchrun / the course launcher: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
//                                   LOCAL_RANK, LOCAL_WORLD_SIZE
//   Slurm (srun):    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE
//   Open MPI:        OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
//                    OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE
// MASTER_ADDR and MASTER_PORT are always needed (Slurm and MPI do not set them).
// LOCAL_RANK defaults to RANK and LOCAL_WORLD_SIZE to WORLD_SIZE (one node).
// A missing or malformed variable is a ConfigError naming it and how to set it.
#pragma once

#include <string>

namespace course {

/// Who this rank is and where rank 0 is: what read_dist_env() returns.
struct DistEnv {
  int rank = 0;              ///< The global rank, 0 to world_size - 1.
  int world_size = 1;        ///< The number of ranks in the job.
  int local_rank = 0;        ///< The rank on this node (picks the GPU).
  int local_world_size = 1;  ///< The number of ranks on this node.
  std::string master_addr;   ///< Where rank 0 hosts the store.
  int master_port = 0;       ///< The store's port on master_addr.
  std::string source;        ///< "env", "slurm" or "openmpi": where rank and size came from
};

/// True when this process was started as one rank (RANK, SLURM_PROCID or
/// OMPI_COMM_WORLD_RANK is set), false when a driver should launch ranks itself.
bool started_as_rank();

/// Reads and validates the variables above. Throws ConfigError.
DistEnv read_dist_env();

/// The value of an environment variable, or `fallback` when unset or empty.
std::string env_or(const char* name, const std::string& fallback);

/// The OpenBLAS kernels this CPU's features allow, for OPENBLAS_CORETYPE: "SkylakeX" with
/// AVX-512 (F, CD, BW, DQ, VL), "Haswell" with AVX2 and FMA, else "" (let OpenBLAS pick).
/// OpenBLAS picks its kernels by the CPU's model number, read when the library loads; a
/// virtual machine that reports a generic model gets its SSE3 kernels (Prescott), two to
/// three times slower. The launcher passes this to its ranks unless OPENBLAS_CORETYPE is
/// set (a one-process driver or test keeps OpenBLAS's own choice: set it by hand there).
std::string blas_coretype_for_cpu();

}  // namespace course
