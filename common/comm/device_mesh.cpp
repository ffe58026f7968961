// device_mesh.cpp: see device_mesh.h.
#include "device_mesh.h"

#include <utility>

#include "error.h"

namespace course {

namespace {

std::string dim_names(const std::vector<MeshDim>& dims, const char* sep) {
  std::string out;
  for (size_t d = 0; d < dims.size(); ++d) out += (d ? sep : "") + dims[d].name;
  return out;
}

std::string dim_sizes(const std::vector<MeshDim>& dims, const char* sep) {
  std::string out;
  for (size_t d = 0; d < dims.size(); ++d) out += (d ? sep : "") + std::to_string(dims[d].size);
  return out;
}

}  // namespace

MeshLayout::MeshLayout(std::vector<MeshDim> dims) : dims_(std::move(dims)) {
  if (dims_.empty()) throw ConfigError("a device mesh needs at least one dimension");
  for (size_t d = 0; d < dims_.size(); ++d) {
    const MeshDim& dim = dims_[d];
    if (dim.name.empty() || dim.size < 1) {
      throw ConfigError("device mesh dimension " + std::to_string(d) + " ('" + dim.name +
                        "', size " + std::to_string(dim.size) +
                        "): every dimension needs a name and a size >= 1");
    }
    for (size_t e = 0; e < d; ++e) {
      if (dims_[e].name == dim.name) {
        throw ConfigError("device mesh dimension '" + dim.name + "' is named twice (" +
                          dim_names(dims_, ", ") + "): name each dimension once");
      }
    }
    world_ *= dim.size;
  }
}

int MeshLayout::dim_index(const std::string& dim) const {
  for (size_t d = 0; d < dims_.size(); ++d) {
    if (dims_[d].name == dim) return static_cast<int>(d);
  }
  throw ConfigError("the device mesh has no dimension '" + dim + "': its dimensions are " +
                    dim_names(dims_, ", "));
}

int MeshLayout::size(const std::string& dim) const {
  return dims_[dim_index(dim)].size;
}

std::vector<int> MeshLayout::coordinates(int rank) const {
  if (rank < 0 || rank >= world_) {
    throw ConfigError("rank " + std::to_string(rank) + " is not in the device mesh " +
                      dim_names(dims_, " x ") + " of " + std::to_string(world_) + " ranks");
  }
  std::vector<int> coords(dims_.size());
  for (int d = ndim() - 1; d >= 0; --d) {  // the last dimension is the inner one
    coords[d] = rank % dims_[d].size;
    rank /= dims_[d].size;
  }
  return coords;
}

int MeshLayout::coordinate(int rank, const std::string& dim) const {
  return coordinates(rank)[dim_index(dim)];
}

int MeshLayout::rank_at(const std::vector<int>& coords) const {
  bool ok = coords.size() == dims_.size();
  int rank = 0;
  for (size_t d = 0; ok && d < dims_.size(); ++d) {
    ok = coords[d] >= 0 && coords[d] < dims_[d].size;
    rank = rank * dims_[d].size + coords[d];
  }
  if (!ok) {
    throw ConfigError("coordinates " + format_ranks(coords) + " are not in the device mesh " +
                      dim_names(dims_, " x ") + " = " + dim_sizes(dims_, " x "));
  }
  return rank;
}

std::vector<int> MeshLayout::group_ranks(int rank, const std::string& dim) const {
  const int d = dim_index(dim);
  std::vector<int> coords = coordinates(rank);
  std::vector<int> ranks;
  for (int i = 0; i < dims_[d].size; ++i) {
    coords[d] = i;
    ranks.push_back(rank_at(coords));
  }
  return ranks;
}

std::vector<std::vector<int>> MeshLayout::groups(const std::string& dim) const {
  const int d = dim_index(dim);
  std::vector<std::vector<int>> out;
  for (int r = 0; r < world_; ++r) {
    if (coordinates(r)[d] == 0) out.push_back(group_ranks(r, dim));  // r is its smallest
  }
  return out;
}

std::string MeshLayout::describe() const {
  std::string out = dim_names(dims_, " x ") + " = " + dim_sizes(dims_, " x ") + ":";
  for (int d = ndim() - 1; d >= 0; --d) {
    out += std::string(d == ndim() - 1 ? " " : "; ") + dims_[d].name + " groups";
    for (const std::vector<int>& g : groups(dims_[d].name)) out += " " + format_ranks(g);
  }
  return out;
}

std::string MeshLayout::describe_rank(int rank) const {
  const std::vector<int> coords = coordinates(rank);
  std::string out = "rank " + std::to_string(rank) + ":";
  for (int d = 0; d < ndim(); ++d) {
    out += std::string(d ? ", " : " ") + dims_[d].name + " " + std::to_string(coords[d]) + " of " +
           std::to_string(dims_[d].size) + " " + format_ranks(group_ranks(rank, dims_[d].name));
  }
  return out;
}

DeviceMesh::DeviceMesh(MeshLayout layout, int rank,
                       std::vector<std::shared_ptr<ProcessGroup>> groups)
    : layout_(std::move(layout)), rank_(rank), groups_(std::move(groups)) {
  layout_.coordinates(rank_);  // ConfigError when the rank is outside the mesh
  if (groups_.size() != layout_.dims().size()) {
    throw ConfigError("DeviceMesh: " + std::to_string(groups_.size()) + " groups for " +
                      std::to_string(layout_.ndim()) + " dimensions: one group per dimension");
  }
}

std::shared_ptr<ProcessGroup> DeviceMesh::group(const std::string& dim) const {
  return groups_[layout_.dim_index(dim)];
}

DeviceMesh init_device_mesh(Subgroups& world, std::vector<MeshDim> dims) {
  MeshLayout layout(std::move(dims));
  if (layout.world() != world.world()) {
    throw ConfigError("device mesh " + dim_names(layout.dims(), " x ") + " = " +
                      dim_sizes(layout.dims(), " x ") + " has " + std::to_string(layout.world()) +
                      " ranks, but the world has " + std::to_string(world.world()) +
                      ": choose sizes whose product is the number of ranks");
  }
  std::vector<std::shared_ptr<ProcessGroup>> mine(layout.dims().size());
  for (size_t d = 0; d < layout.dims().size(); ++d) {
    const std::string& dim = layout.dims()[d].name;
    const std::vector<std::vector<int>> groups = layout.groups(dim);
    for (size_t i = 0; i < groups.size(); ++i) {
      std::shared_ptr<ProcessGroup> group = world.new_group(groups[i], dim + std::to_string(i));
      if (group) mine[d] = std::move(group);
    }
  }
  return DeviceMesh(std::move(layout), world.rank(), std::move(mine));
}

}  // namespace course
