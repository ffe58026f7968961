// tp_equivalence.cpp: lesson 15, given: the tensor-parallel model against one process
// (tp_equivalence.h).
#include "tp_equivalence.h"

#include <memory>

#include "ddp_training.h"
#include "ops.h"

namespace course {

double tp_tolerance(const TpTrainingOptions& o) {
  return equivalence_tolerance(o);
}

double tp_equivalence_difference(const TpTrainingOptions& o, const ModelShape& shape,
                                 const NamedTensors& init, const std::vector<Batch>& global_batches,
                                 const DeviceMesh& mesh, ProcessGroup& world) {
  // The serial model on every rank, on the whole global batch.
  Rng unused(0);
  SerialMlp serial(shape, unused);
  serial.load_state_dict(init);
  std::unique_ptr<Optimizer> serial_opt = make_ddp_optimizer(o, serial.parameters());
  // The parallel model on the mesh.
  TensorParallelMlp model(init, shape, *mesh.group("tp"));
  std::unique_ptr<Optimizer> tp_opt = make_ddp_optimizer(o, model.parameters());
  std::unique_ptr<GradientSync> dp_sync = make_tp_dp_sync(model, mesh);
  for (const Batch& global : global_batches) {
    train_step(serial, *serial_opt, global);
    const int64_t B = global.targets.numel() / mesh.size("dp");
    const int64_t begin = mesh.coordinate("dp") * B;
    const Batch mine{global.inputs.rows(begin, B), global.targets.rows(begin, B)};
    tp_train_step(model, *tp_opt, dp_sync.get(), mine);
  }
  double difference = max_abs_difference(model.full_state_dict(), serial.state_dict());
  std::vector<float> worst{static_cast<float>(difference)};
  world.all_reduce(worst, ReduceOp::MAX);
  return worst[0];
}

}  // namespace course
