// driver_recipe.h: lesson 01, given: the GroupRecipe (process_group_factory.h) that every
// driver and benchmark from lesson 02 on hands to make_process_group.
//
//   auto pg = make_process_group(ctx.args().backend, ctx.store(), ctx.rank(), ctx.world(),
//                                driver_recipe(ctx, "lesson05", install_lesson05));
//
// The recipe names the group, says where this rank can be reached (the driver's advertised
// host), carries the job token (handshake.h), builds the tcp backend's mesh with this
// lesson's connect_full_mesh, and on nccl puts this rank on GPU LOCAL_RANK. The tcp
// backend's algorithms are the caller's: install_lesson02 ... install_lesson05, or lesson
// 12's install_lesson12(recipe) afterwards, which also sets the shared-memory connector.
//
// What this is not: a group. Nothing connects until make_process_group runs; gloo and
// nccl ignore the tcp-only fields.
#pragma once

#include <functional>
#include <string>

#include "driver.h"
#include "process_group_factory.h"

namespace course {

/// The recipe of the group `name` (two groups alive at once need two names) for this
/// driver's rank; `install` fills the tcp backend's algorithms (empty: set it later).
GroupRecipe driver_recipe(DriverContext& ctx, const std::string& name,
                          std::function<void(TcpAlgorithms&)> install = {});

}  // namespace course
