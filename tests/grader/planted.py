"""planted.py: mistakes that used to pass, planted in the reference answers for the grader's
self-test (test_grader.py, LearnerCopy.test_7_planted_mistakes).

Each mistake is one or two lines of a lesson's answer file (or of its given code, the
reference answers beside it) changed so that the results still look right on easy
inputs; the lesson's tests must catch it and the lesson must score at most half of its
points. PLANTED: (lesson, file, name) -> substitutions (pattern, replacement, count),
applied to solutions/<lesson>/<file> (lessons/<lesson>/<file> for given code) as
SABOTAGE's are (a regular expression that must match exactly `count` times). The
lesson's other answer files are the reference.
"""

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
}
