// data_parallel_times.h: lesson 08, where a DataParallel step's time goes (given).
//
// DataParallel::forward fills the forward half, the gather's backward node the backward
// half; the driver adds the loss and the optimizer, which happen outside DataParallel.
// Wall times are measured on the host thread (device 0); busy times on each device's
// worker thread, so wall - busy of a device is the time it waited for the slowest one.
#pragma once

#include <cstddef>
#include <vector>

#include "clock.h"  // seconds_since, which DataParallel times its phases with

namespace course {

struct DataParallelTimes {
  double replicate = 0;               ///< copying the master's parameters to the replicas (serial)
  double scatter = 0;                 ///< cutting the batch into chunks (serial)
  double forward = 0;                 ///< wall time of the replicas' forward passes (parallel)
  double gather = 0;                  ///< concatenating the outputs on device 0 (serial)
  double backward = 0;                ///< wall time of the replicas' backward passes (parallel)
  double reduce_add = 0;              ///< summing the replicas' gradients into the master (serial)
  std::vector<double> forward_busy;   ///< per device: its own forward
  std::vector<double> backward_busy;  ///< per device: its own backward

  /// Zeroes everything, sized for `devices`.
  void clear(int devices) {
    *this = DataParallelTimes();
    forward_busy.assign(devices, 0.0);
    backward_busy.assign(devices, 0.0);
  }

  /// Adds one backward: its wall time and each device's busy seconds.
  void add_backward(double wall, const std::vector<double>& busy) {
    backward += wall;
    for (size_t k = 0; k < busy.size() && k < backward_busy.size(); ++k) {
      backward_busy[k] += busy[k];
    }
  }
};

}  // namespace course
