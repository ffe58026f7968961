// temp_dir.h: a GoogleTest fixture that gives each test a fresh, empty directory and
// removes it afterwards, for tests that write files (IDX, safetensors, checkpoints).
//
//   class Checkpoint : public course::test::TempDir {};
//   TEST_F(Checkpoint, SavesAndLoads) { save(model, path("model.safetensors")); ... }
//
// What this is not: shared between tests; every test gets its own mkdtemp() directory.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace course::test {

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "course-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << "mkdtemp(" << pattern << ") failed";
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  /// `name` inside this test's directory.
  std::string path(const std::string& name) const {
    return (std::filesystem::path(dir_) / name).string();
  }
  /// The directory itself.
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace course::test
