// driver_prologue.cpp: lesson 01, given: a driver's first steps (see the header).
#include "driver_prologue.h"

#include <utility>

#include "driver_recipe.h"

namespace course {

int select_device(const DriverContext& ctx, const std::string& device) {
  if (!device.empty()) check_backend_device(ctx.args().backend, device);
  return ctx.env().local_rank;
}

std::unique_ptr<ProcessGroup> make_driver_group(DriverContext& ctx, const std::string& name,
                                                std::function<void(TcpAlgorithms&)> install) {
  return make_process_group(ctx.args().backend, ctx.store(), ctx.rank(), ctx.world(),
                            driver_recipe(ctx, name, std::move(install)));
}

DriverStart start_driver(DriverContext& ctx, const DriverPrologue& prologue) {
  DriverStart start;
  start.local_rank = select_device(ctx, prologue.device);
  start.group = make_driver_group(ctx, prologue.group, prologue.install);
  print_driver_header(ctx, prologue.header);
  if (prologue.self_check) {
    start.failed =
        self_check_failure(ctx, prologue.self_check(*start.group), prologue.self_check_passed);
  }
  return start;
}

}  // namespace course
