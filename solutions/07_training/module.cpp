// module.cpp: lesson 07, part 2: the Module base's parameter order (see module.h); the rest of
// the base is given, in module_given.cpp.
#include "module.h"

#include "error.h"

namespace course {

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> out;
  // BEGIN SOLUTION: own parameters first, then each child's, names prefixed "child."
  out = parameters_;
  for (const auto& [child_name, child] : children_) {
    for (auto& [name, p] : child->named_parameters()) out.emplace_back(child_name + "." + name, p);
  }
  // END SOLUTION
  return out;
}

}  // namespace course
