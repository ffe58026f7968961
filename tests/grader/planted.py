"""planted.py: mistakes that used to pass, planted in the reference answers for the grader's
self-test (test_grader.py, Planted.test_planted_mistakes_score_at_most_half).

Each mistake is one or two lines of a lesson's answer file (or of its given code, the
reference answers beside it) changed so that the results still look right on easy
inputs; the lesson's tests must catch it and the lesson must score at most half of its
points. PLANTED: (lesson, file, name) -> substitutions (pattern, replacement, count),
applied to solutions/<lesson>/<file> (lessons/<lesson>/<file> for given code) as
SABOTAGE's are (a regular expression that must match exactly `count` times). The
lesson's other answer files are the reference.

Lessons 15 and 16 (PLANTED_WITH_ALL) are graded only with GRADER_TEST_ALL=1: each of their
gradings builds and runs the lesson in the learner's copy, minutes `make test` has not got.
Beside each of their entries: the score measured with `grade.py --impl solutions` on the
reference with the mistake planted, and the cause ./lessonNN's first FAIL line names.
"""

PLANTED_WITH_ALL = {"15", "16"}

PLANTED = {
    # Lesson 11 (given code, graded with the reference answers): SyncBatchNorm updates its
    # running variance with the biased variance (torch's running estimate is unbiased).
    ("11_ddp_training", "sync_batch_norm_given.cpp", "SyncBatchNorm's running variance biased"): [
        (r"  batch_norm_update_running\(stats, eps\(\), momentum\(\), running_mean_, running_var_,"
         r"\n\s*num_batches_tracked_\);\n",
         """\
  {  // the running variance from the biased variance (no n / (n - 1))
    float* rm = running_mean_.data();
    float* rv = running_var_.data();
    for (size_t j = 0; j < stats.mean.size(); ++j) {
      const double var = 1.0 / (static_cast<double>(stats.invstd[j]) * stats.invstd[j]) - eps();
      rm[j] = static_cast<float>((1.0 - momentum()) * rm[j] + momentum() * stats.mean[j]);
      rv[j] = static_cast<float>((1.0 - momentum()) * rv[j] + momentum() * var);
    }
    num_batches_tracked_.data()[0] += 1.0f;
  }
""", 1),
    ],
    # Lesson 12: try_write takes the first free slot's address once and steps on by the
    # stride: a message that starts mid-ring runs past the ring's last slot (a crash in
    # the shared segment) instead of wrapping to slot 0.
    ("12_shm_transport", "shm_channel.cpp", "a message that wraps copied as if contiguous"): [
        (r"\n  while \(done < n && head - tail < slot_count_\) \{\n    char\* s = slot\(head\);\n",
         "\n  char* s = slot(head);\n  while (done < n && head - tail < slot_count_) {\n", 1),
        (r"\n    done \+= k;\n  \}\n  if \(done > 0\) ring_doorbell",
         "\n    done += k;\n    s += shm_slot_stride(slot_bytes_);\n  }\n  if (done > 0) ring_doorbell", 1),
    ],
    # Lesson 13: forward prefetches unit i+2 instead of i+1. The parameters still end at
    # DDP's; only the order of the gathers is wrong.
    ("13_sharding", "fsdp.cpp", "prefetch two units ahead"): [
        (r"i \+ 1 < units_\.size\(\)\) unshard\(i \+ 1\);",
         "i + 2 < units_.size()) unshard(i + 2);", 1),
    ],
    # Lesson 13: stage 2 never frees a unit's unsharded gradient buffer (only stage 3 does).
    ("13_sharding", "fsdp.cpp", "stage 2 keeps every gradient buffer"): [
        (r"if \(options_\.stage != 1\) free_grad_buffer\(u\);",
         "if (options_.stage == 3) free_grad_buffer(u);", 1),
    ],
    # Lesson 14: the fp16 hook divides after the all-reduce: exact at 2 and 4 ranks on
    # ordinary values, an overflow near 65504 / N.
    ("14_comm_hooks", "default_hooks.cpp", "fp16 divided after the all-reduce"): [
        (r"to_halves\(values\.subspan\(first, halves\.size\(\)\), inv_world, halves, kind\);",
         "to_halves(values.subspan(first, halves.size()), 1.0f, halves, kind);\n"
         "    (void)inv_world;", 1),
        (r"from_halves\(sums, values\.subspan\(first, sums\.size\(\)\), kind\);",
         "from_halves(sums, values.subspan(first, sums.size()), kind);\n"
         "    for (float& v : values.subspan(first, sums.size())) v /= group.size();", 1),
    ],
    # Lesson 14: the fp16 hook casts first and divides in fp16 (torch's order): two
    # roundings, which differ from one where x / N is an fp16 subnormal, or N is 3.
    ("14_comm_hooks", "default_hooks.cpp", "fp16 cast before the division"): [
        (r"to_halves\(values\.subspan\(first, halves\.size\(\)\), inv_world, halves, kind\);",
         "to_halves(values.subspan(first, halves.size()), 1.0f, halves, kind);\n"
         "    for (uint16_t& h : halves) h = float_to_half(half_to_float(h, kind) * inv_world, kind);",
         1),
    ],
    # Lesson 15: the vocabulary-parallel loss takes exp of the raw logits (no maximum
    # subtracted): right on small logits, inf once a logit passes 88. 11.6 of 25; the
    # driver: "... the loss is inf with large logits ...: exp(z) overflows in float:
    # subtract the row maximum".
    ("15_tensor_parallel", "vocab_parallel_loss.cpp", "no row maximum subtracted"): [
        (r"std::exp\(z\[i \* n \+ c\] - m\[i\]\)", "std::exp(z[i * n + c])", 1),
        (r"sp\[B \+ i\] = z\[i \* n \+ target_t\[i\]\] - m\[i\];",
         "sp[B + i] = z[i * n + target_t[i]];", 1),
    ],
    # Lesson 15: each rank subtracts its own row maximum (the MAX all-reduce left out): the
    # same loss wherever the shards' maxima agree. 9.8 of 25; the driver: "... each rank
    # subtracted its own row maximum: the maximum must be the global one: the MAX
    # all-reduce over the tensor-parallel group".
    ("15_tensor_parallel", "vocab_parallel_loss.cpp", "the local row maximum only"): [
        (r"\n  tp\.all_reduce\(m, ReduceOp::MAX\);\n", "\n", 1),
    ],
    # Lesson 15: f and g swapped in both layers (identical at T = 1). 9.8 of 25; the
    # driver: "ColumnParallelLinear::forward: the output is that of the input summed over
    # the 4 ranks: copy_to_tp (f) and reduce_from_tp (g) may be swapped".
    ("15_tensor_parallel", "parallel_linear.cpp", "f and g swapped"): [
        (r"linear\(copy_to_tp\(x, tp_\), weight_, bias_\)", "linear(reduce_from_tp(x, tp_), weight_, bias_)", 1),
        (r"reduce_from_tp\(linear\(x_t, weight_, Variable\(\)\), tp_\)",
         "copy_to_tp(linear(x_t, weight_, Variable()), tp_)", 1),
    ],
    # Lesson 15: the gather's backward returns the whole gradient, not this rank's slice.
    # 9.8 of 25; the driver: "GatherFromTpBackward::apply: returned [3, 16] for an input of
    # [3, 4]: return this rank's slice of g".
    ("15_tensor_parallel", "tp_ops.cpp", "the gather's backward returns the whole gradient"): [
        (r"const int64_t n = g\.size\(1\) / tp->size\(\);\n  return \{column_slice\(g, tp->rank\(\) \* n, n\)\};",
         "return {g};", 1),
    ],
    # Lesson 16: 1F1B's warm-up counted from the wrong end (min(s, M)): it deadlocks. 5.0
    # of 25; the driver: "build_1f1b(2, 3): stage 0 computes F0 B0 F1 B1 F2 B2, expected
    # F0 F1 B0 F2 B1 B2 (check_schedule on it: deadlock: ...)".
    ("16_pipeline_parallel", "schedule.cpp", "1F1B's warm-up counted from the wrong end"): [
        (r"const int warmup = std::min\(stages - 1 - s, micro_batches\);",
         "const int warmup = std::min(s, micro_batches);", 1),
    ],
    # Lesson 16: the backward of micro-batch m starts from micro-batch m+1's activations.
    # 11.0 of 25; the driver: "PipelineExecutor on one stage (gpipe, M = 3): stage 0 (rank
    # 2) in B0: backward_action(0) left micro-batch 0's output held after its backward".
    ("16_pipeline_parallel", "pipeline_executor.cpp", "the backward of m uses m+1's activations"): [
        (r"InFlight& f = in_flight_\[m\];\n  const Action action = \{ActionKind::backward, m\};",
         "InFlight& f = in_flight_[m + 1];\n  const Action action = {ActionKind::backward, m};", 1),
    ],
    # Lesson 16: the last stage computes the loss of micro-batch 0 only. 11.0 of 25; the
    # driver: "... in F1: forward_action(1) keeps [2, 4] for micro-batch 1's backward on
    # the last stage, not its loss".
    ("16_pipeline_parallel", "pipeline_executor.cpp", "the loss of one micro-batch only"): [
        (r"if \(stage_\.ends_model\(\)\) \{\n    const Tensor& target",
         "if (stage_.ends_model() && m == 0) {\n    const Tensor& target", 1),
    ],
    # Lesson 16: the loss not scaled by 1/M (the gradient of the sum of the micro-batches).
    # 12.0 of 25; the driver: "... the gradients are M = 3 times one process's:
    # forward_action must scale the last stage's loss of each micro-batch by 1/M".
    ("16_pipeline_parallel", "pipeline_executor.cpp", "the loss not scaled by 1/M"): [
        (r"out = scale\(cross_entropy\(out, target\), 1\.0f / static_cast<float>\(micro_batches_\)\);",
         "out = cross_entropy(out, target);", 1),
    ],
    # Lesson 16: the loss scaled by 1/M, and its backward seeded with 1/M again. 12.0 of
    # 25; the driver: "... the gradients are 1/M = 1/3 of one process's: the loss is
    # scaled by 1/M twice".
    ("16_pipeline_parallel", "pipeline_executor.cpp", "the loss scaled by 1/M twice"): [
        (r"    f\.output\.backward\(\);\n",
         "    f.output.backward(Tensor::scalar(1.0f / static_cast<float>(micro_batches_)));\n", 1),
    ],
}
