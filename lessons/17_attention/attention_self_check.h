// attention_self_check.h: lesson 17, given: ./lesson17's check of your exercise before it
// trains, and the direct computation it and tests/17_attention compare against.
//
//   const std::string problem = attention_self_check(std::cout);   // "" when all is well
//
// Each kernel of attention.h, in double, against attention_oracle_*: plain loops over the
// whole S x S matrix, the formulas of attention.h's top written out one by one. Inputs
// depend on the problem (head), the position and the feature (attention_input), S = 37 is
// no multiple of the blocks (8 x 5, and 64 x 64, larger than S), causal and not, and every
// output starts as NaN, so an entry left unwritten, or accumulated into instead of
// overwritten, is caught. Each backward is given the oracle's p, or o and lse, so a wrong
// forward is not blamed on the backward. Under 10 ms.
//
// The problem names the function at fault, the array and the case:
//   "attention_tiled_backward: dk differs from the direct computation by 0.31 at
//    [head 1, row 4, feature 2] (S = 37, d = 5, causal, blocks 8 x 5)"
// A stub's NotImplementedError is not caught: the driver reports the TODO.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "attention.h"

namespace course {

/// The direct computation of one AttentionShape in double (see the top of this file).
struct AttentionOracle {
  std::vector<double> o;    ///< [n, S, d]
  std::vector<double> p;    ///< [n, S, S], masked entries 0
  std::vector<double> lse;  ///< [n, S]
};

/// Forward: S = c q kᵀ (causal: -inf above the diagonal), p = softmax of each row,
/// lse = log sum exp of each row, o = p v. Arrays as attention.h's.
AttentionOracle attention_oracle_forward(const AttentionShape& s, const std::vector<double>& q,
                                         const std::vector<double>& k,
                                         const std::vector<double>& v);

/// dq, dk, dv from dout: dP = dout vᵀ, dS = p (dP - rowsum(dP p)), dq = c dS k,
/// dk = c dSᵀ q, dv = pᵀ dout, each matrix whole.
struct AttentionOracleGrads {
  std::vector<double> dq, dk, dv;  ///< [n, S, d] each
};
/// The backward of attention_oracle_forward at q, k, v.
AttentionOracleGrads attention_oracle_backward(const AttentionShape& s,
                                               const std::vector<double>& q,
                                               const std::vector<double>& k,
                                               const std::vector<double>& v,
                                               const std::vector<double>& dout);

/// [n, S, d] inputs that depend on the problem, the row and the feature, of size about 1 and
/// never constant: `which` (0 q, 1 k, 2 v, 3 dout) gives each array its own values.
std::vector<double> attention_input(const AttentionShape& s, int which);

/// "" when every kernel matched the oracle, else the first problem (see the top). Prints one
/// line per kernel that passed to `out`.
std::string attention_self_check(std::ostream& out);
/// What ./lesson17 prints when attention_self_check passed.
extern const char* const kLesson17SelfCheckPassed;

}  // namespace course
