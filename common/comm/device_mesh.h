// device_mesh.h: the world as a grid of named dimensions, with a group per row of each
// (torch.distributed.device_mesh.init_device_mesh).
//
//   Subgroups world(...);                                        // subgroups.h
//   DeviceMesh mesh = init_device_mesh(world, {{"dp", 2}, {"tp", 2}});
//   if (world.rank() == 0) std::cout << mesh.layout().describe() << "\n";
//     // dp x tp = 2 x 2: tp groups {0,1} {2,3}; dp groups {0,2} {1,3}
//   mesh.group("tp")->all_reduce(partial, ReduceOp::SUM);   // this rank's tp group
//   const int shard = mesh.coordinate("tp");                 // == mesh.group("tp")->rank()
//
// LAYOUT (torch's, row-major: the LAST dimension is the inner one). With dims (d0, ..., dn)
// of sizes (s0, ..., sn), world rank r has coordinates (c0, ..., cn) where
// r = ((c0 * s1 + c1) * s2 + c2) ... ; for {"dp", D}, {"tp", T}: r = dp * T + tp, so a tp
// group is T consecutive ranks (one node's GPUs, in Megatron's layout) and a dp group is
// every T-th rank. The group of rank r along dimension d is every rank whose coordinates
// equal r's except in d, in increasing order, so its group rank is r's coordinate in d.
//
// CREATION ORDER (the same on every rank, as new_group requires): for each dimension in
// the order given, every group along it, ordered by its smallest rank; each named
// "<dim><i>" (tp0, tp1, dp0, dp1): every rank calls new_group for every group, so building
// a mesh is a collective over the world.
//
// What this is not: a placement of tensors (torch's DTensor); only the ranks and groups.
//
// Thread safety: const methods from any thread; the groups are as subgroups.h says.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "process_group.h"
#include "subgroups.h"

namespace course {

/// One dimension of a mesh: its name ("dp", "tp") and its size (>= 1).
struct MeshDim {
  std::string name;  ///< "dp", "tp": what group(), coordinate() and size() are asked with.
  int size = 1;      ///< The number of ranks along it.
};

/// The arithmetic of a mesh, without groups (for printing, flag checks, tests).
class MeshLayout {
 public:
  /// Throws ConfigError when dims is empty, a size is < 1, a name is empty or repeated.
  explicit MeshLayout(std::vector<MeshDim> dims);

  /// The dimensions, outermost first.
  const std::vector<MeshDim>& dims() const { return dims_; }
  /// The number of dimensions.
  int ndim() const { return static_cast<int>(dims_.size()); }
  /// The number of ranks: the product of the sizes.
  int world() const { return world_; }
  /// The index of dimension `dim`. Throws ConfigError naming the mesh's dimensions.
  int dim_index(const std::string& dim) const;
  /// The size of dimension `dim` (ConfigError as dim_index).
  int size(const std::string& dim) const;
  /// The coordinates of world rank `rank`, outermost first. REQUIRES rank in [0, world()).
  std::vector<int> coordinates(int rank) const;
  /// Rank `rank`'s coordinate along `dim`.
  int coordinate(int rank, const std::string& dim) const;
  /// The world rank at `coords` (one per dimension, each in range; ConfigError otherwise).
  int rank_at(const std::vector<int>& coords) const;
  /// The world ranks of `rank`'s group along `dim`, increasing.
  std::vector<int> group_ranks(int rank, const std::string& dim) const;
  /// Every group along `dim`, in creation order (ordered by smallest rank).
  std::vector<std::vector<int>> groups(const std::string& dim) const;
  /// "dp x tp = 2 x 2: tp groups {0,1} {2,3}; dp groups {0,2} {1,3}": the sizes, then the
  /// groups of each dimension, innermost first. What a driver prints at start-up.
  std::string describe() const;
  /// "rank 3: dp 1 of 2 {1,3}, tp 1 of 2 {2,3}": one rank's coordinates and groups.
  std::string describe_rank(int rank) const;

 private:
  std::vector<MeshDim> dims_;
  int world_ = 1;
};

/// This rank's view of a mesh: the layout, and its group along each dimension.
class DeviceMesh {
 public:
  /// Built by init_device_mesh; `groups[d]` is this rank's group along dimension d.
  DeviceMesh(MeshLayout layout, int rank, std::vector<std::shared_ptr<ProcessGroup>> groups);

  /// The layout (sizes, coordinates, every group's ranks, describe()).
  const MeshLayout& layout() const { return layout_; }
  /// This rank in the world.
  int rank() const { return rank_; }
  /// This rank's group along `dim` (never null; ConfigError for an unknown dim).
  std::shared_ptr<ProcessGroup> group(const std::string& dim) const;
  /// This rank's coordinate along `dim` (torch's get_local_rank): its rank in group(dim).
  int coordinate(const std::string& dim) const { return layout_.coordinate(rank_, dim); }
  /// The size of `dim`: the size of group(dim).
  int size(const std::string& dim) const { return layout_.size(dim); }
  /// The world ranks of group(dim), increasing (group rank i is the i-th).
  std::vector<int> group_ranks(const std::string& dim) const {
    return layout_.group_ranks(rank_, dim);
  }

 private:
  MeshLayout layout_;
  int rank_;
  std::vector<std::shared_ptr<ProcessGroup>> groups_;
};

/// Collective over the world: every rank calls it with the same dims. Throws ConfigError
/// when the sizes' product is not world.world() (naming both), else makes every group of
/// every dimension through world.new_group in the order above and returns this rank's
/// mesh. init_device_mesh(world, {{"dp", D}, {"tp", T}}): TP is the inner dimension.
DeviceMesh init_device_mesh(Subgroups& world, std::vector<MeshDim> dims);

}  // namespace course
