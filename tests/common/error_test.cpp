// error_test.cpp: tests of common/runtime/error.h's helpers: exception_message, which the
// tcp backend, DuplexLink and the test harness turn caught exceptions into text with.
// Run alone: ./build/<dir>/tests/common/test_common --gtest_filter='ExceptionMessage*'
#include "error.h"

#include <gtest/gtest.h>

#include <exception>
#include <stdexcept>
#include <string>

namespace course {
namespace {

TEST(ExceptionMessage, IsTheWhatOfAStandardException) {
  EXPECT_EQ(exception_message(std::make_exception_ptr(std::runtime_error("disk 3 is full"))),
            "disk 3 is full");
  // A course error keeps who() in front, as what() has it.
  const ConfigError error("--np 0: give at least one rank");
  const std::string message = exception_message(std::make_exception_ptr(error));
  EXPECT_EQ(message, error.what());
  EXPECT_NE(message.find("--np 0: give at least one rank"), std::string::npos) << message;
}

TEST(ExceptionMessage, NamesAThrownValueThatIsNoException) {
  EXPECT_EQ(exception_message(std::make_exception_ptr(42)),
            "an exception that is not a std::exception");
  try {
    throw std::string("a thrown string");
  } catch (...) {
    EXPECT_EQ(exception_message(std::current_exception()),
              "an exception that is not a std::exception");
  }
}

}  // namespace
}  // namespace course
