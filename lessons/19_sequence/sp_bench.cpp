// sp_bench.cpp: lesson 19, given: table 4 of ./lesson19 --bench (sp_bench.h).
#include "sp_bench.h"

#include <chrono>
#include <string>
#include <vector>

#include "activation_ledger.h"
#include "bench_stats.h"
#include "bench_table.h"
#include "byte_stream.h"
#include "clock.h"
#include "gpt.h"
#include "ops.h"
#include "output_file.h"
#include "saved_tensors.h"
#include "tp_sequence.h"

namespace course {

namespace {

constexpr int64_t kSpBatch = 4;

// What one forward and backward of the model cost this rank.
struct StepCost {
  double seconds = 0;
  int64_t sent = 0, activations = 0, layer_norms = 0;
};

StepCost one_step(Gpt& model, const TokenBatch& batch, ProcessGroup& tp, bool sp) {
  const int T = tp.size(), t = tp.rank();
  const int64_t seq = batch.inputs.size(1);
  std::vector<int64_t> positions;
  for (int64_t p = 0; p < seq; ++p) positions.push_back(p);
  Tensor ids = batch.inputs, targets = batch.targets;
  if (sp) {  // this rank's T-th of each sequence
    const int64_t n = seq / T;
    ids = sequence_piece(batch.inputs, T, t);
    targets = sequence_piece(batch.targets.reshape({kSpBatch, seq}), T, t).reshape({kSpBatch * n});
    positions = std::vector<int64_t>(positions.begin() + t * n, positions.begin() + (t + 1) * n);
  }
  model.set_block_runner(tp_block_runner(tp, sp, {}));
  tp.barrier();
  StepCost cost;
  const uint64_t before = tcp_bytes_sent();
  const auto t0 = std::chrono::steady_clock::now();
  const Variable loss = cross_entropy(model.forward(Variable(ids), positions), targets);
  std::vector<Tensor> params;
  for (const Variable& p : model.parameters()) params.push_back(p.data());
  const SavedTensorLedger ledger = saved_tensor_ledger(loss, params);
  loss.backward();
  cost.seconds = seconds_since(t0);
  cost.sent = static_cast<int64_t>(tcp_bytes_sent() - before);
  cost.activations = ledger.total_bytes;
  cost.layer_norms = ledger.bytes_of("LayerNormBackward");
  model.set_block_runner({});
  model.zero_grad();
  return cost;
}

}  // namespace

int run_sp_table(const CpTrainingOptions& o, ProcessGroup& tp, const std::string& csv_path,
                 std::ostream* out) {
  const int T = tp.size();
  if (out) {
    *out << "\n# Table 4: tensor parallelism over heads on T = " << T
         << " ranks, without and with sequence parallelism (B " << kSpBatch << ", L " << o.layers
         << ", H " << o.hidden << ", " << o.heads << " heads): one forward and backward\n";
  }
  if (T < 2 || o.heads % T != 0) {
    if (out) *out << "(left out: " << o.heads << " heads over " << T << " ranks)\n";
    return 0;
  }
  BenchTable table({{"S", 5},
                    {"mode", 6},
                    {"ms", 8},
                    {"sent B", 10},
                    {"model B", 10},
                    {"act/rank B", 11},
                    {"LayerNorm B", 12},
                    {"LN TP/this", 11}});
  if (out) table.print_header(*out);
  int off_model = 0;
  for (const int64_t seq : {64, 128, 256}) {
    if (seq % T != 0) continue;
    GptConfig g;
    g.vocab = 96;
    g.context = seq;
    g.layers = o.layers;
    g.heads = o.heads;
    g.hidden = o.hidden;
    Rng rng(1);
    Gpt model(g, rng);
    const TokenBatch batch = counting_batch(g.vocab, kSpBatch, seq);
    const int64_t payload = o.layers * 4 * 2 * (T - 1) * kSpBatch * seq * o.hidden / T * 4;
    int64_t tp_layer_norms = 0;
    for (const bool sp : {false, true}) {
      std::vector<double> times;
      StepCost cost;
      for (int round = 0; round <= 3; ++round) {
        cost = one_step(model, batch, tp, sp);
        if (round > 0) times.push_back(cost.seconds);
      }
      if (!sp) tp_layer_norms = cost.layer_norms;
      const double ms = 1e3 * slowest_median(times, tp);
      const auto sent = static_cast<int64_t>(
          slowest_samples({static_cast<double>(cost.sent)}, tp)[0]);  // the largest over ranks
      const int64_t model_bytes = payload + 16 * o.layers * (sp ? 8 : 4);
      off_model += sent == model_bytes ? 0 : 1;
      table.add_row(
          {std::to_string(seq), sp ? "SP" : "TP", format_fixed(ms, 2), std::to_string(sent),
           std::to_string(model_bytes), std::to_string(cost.activations),
           std::to_string(cost.layer_norms),
           format_fixed(static_cast<double>(tp_layer_norms) / static_cast<double>(cost.layer_norms),
                        2)},
          out);
    }
  }
  if (out) {
    table.add_note(
        "model B: 4 L ring all-reduces' payload (SP: as many reduce-scatters and all-gathers), "
        "plus 16 B a collective call; sent B must equal it",
        out);
    table.write_csv(output_beside(csv_path, "sp_np" + std::to_string(T) + ".csv"));
  }
  return off_model;
}

}  // namespace course
