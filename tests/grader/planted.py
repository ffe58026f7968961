"""planted.py: mistakes that used to pass, planted in the reference answers for the grader's
self-test (test_grader.py, LearnerCopy.test_7_planted_mistakes).

Each mistake is one or two lines of a lesson's answer file changed so that the results
still look right on easy inputs; the lesson's tests must catch it and the lesson must
score at most half of its points. PLANTED: (lesson, answer file, name) -> substitutions
(pattern, replacement, count), applied to solutions/<lesson>/<file> as SABOTAGE's are
(a regular expression that must match exactly `count` times). The lesson's other answer
files are the reference.
"""

PLANTED = {
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
