// module.cpp: lesson 07, part 2: the Module base's parameter order (see module.h); the rest of
// the base is given, in module_given.cpp.
#include "module.h"

#include "error.h"

namespace course {

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> out;
  // TODO(lesson07): own parameters first, then each child's, names prefixed "child."
  COURSE_TODO();
  return out;
}

}  // namespace course
