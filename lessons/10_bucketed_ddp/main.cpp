// main.cpp: ./lesson10 (being written).
#include "driver.h"
int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson10";
  config.title = "bucketed DDP";
  return course::run_driver(argc, argv, config, nullptr,
                            [](course::DriverContext&) { return course::Verdict::pass(); });
}
