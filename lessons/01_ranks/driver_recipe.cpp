// driver_recipe.cpp: lesson 01, given: a driver's GroupRecipe (see the header).
#include "driver_recipe.h"

#include <utility>

#include "full_mesh.h"
#include "handshake.h"

namespace course {

GroupRecipe driver_recipe(DriverContext& ctx, const std::string& name,
                          std::function<void(TcpAlgorithms&)> install) {
  GroupRecipe recipe;
  recipe.name = name;
  recipe.host = ctx.advertise_host();
  recipe.token = job_token();
  recipe.connect_mesh = connect_full_mesh;
  recipe.install = std::move(install);
  recipe.device = ctx.env().local_rank;  // nccl: this rank's GPU
  return recipe;
}

}  // namespace course
