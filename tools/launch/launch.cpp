// launch.cpp: the standalone rank launcher, `launch`, for any command (torchrun's role).
//
//   launch --np 4 -- ./lesson05 --bench                     4 ranks on this machine
//   launch --nnodes 2 --node-rank 0 --nproc-per-node 4 --master-addr node0 --master-port 29500
//          -- ./lesson11           on node0; the same with --node-rank 1 on node1: 8 ranks
//
// Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
// COURSE_JOB_TOKEN; its output comes back prefixed "[rank r] ". When a rank dies the others
// are stopped, "launch: rank 2 was killed by signal 9 (SIGKILL)" goes to stderr, and launch
// exits with that rank's code (128 + signal for a signal; 130 when launch itself gets
// SIGINT); a flag that does not parse or is out of range exits 64 (flag_checks.h). Several nodes:
// export the same COURSE_JOB_TOKEN=<a secret> to every node's launch, or the token is derived from
// --master-addr and --master-port, which anyone who knows them can compute.
//
// What this is not: the ./lessonNN drivers, which launch themselves (common/driver.h); this
// tool is for commands that do not, and for several machines.
#include <iostream>

#include "error.h"
#include "flag_checks.h"
#include "flags.h"
#include "launcher.h"

int main(int argc, char** argv) {
  course::Flags flags(
      "Starts a command as N ranks and watches them (torchrun's role in the course).");
  flags.footer("Example: launch --np 4 -- ./lesson05 --bench");
  course::LaunchOptions options;
  std::vector<std::string> command;
  bool no_prefix = false;
  flags.option("-n,--np,--nproc-per-node", options.nproc_per_node, "ranks to start on this machine")
      .check(course::count_in(1, 1024))
      .show_default();
  flags.option("--nnodes", options.nnodes, "machines in the job, one launcher each")
      .check(course::count_in(1, 65536))
      .show_default();
  flags.option("--node-rank", options.node_rank, "this machine's index, 0..nnodes-1")
      .check(course::count_in(0, INT32_MAX))
      .show_default();
  flags.option("--master-addr", options.master_addr, "host of rank 0 (the store)").show_default();
  flags
      .option("--master-port", options.master_port,
              "port of the store; 0 picks a free one (one machine only)")
      .check(course::count_in(0, 65535))
      .show_default();
  flags
      .option("--grace-ms", options.grace_ms,
              "after one rank fails: milliseconds between SIGTERM and SIGKILL to the others")
      .check(course::count_in(0, INT32_MAX))
      .show_default();
  flags.flag("--no-prefix", no_prefix, "print the ranks' output without \"[rank r] \"");
  flags.option("command", command, "the program and its arguments, after --").required();
  std::string problem;
  const course::Parsed parsed = flags.parse(argc, argv, problem);
  if (parsed == course::Parsed::kHelp) return 0;
  if (parsed == course::Parsed::kUsageError) {
    std::cerr << "launch: usage: " << problem << " (see --help)" << std::endl;
    return course::kUsageExitCode;
  }
  options.prefix_output = !no_prefix;

  try {
    const course::LaunchResult result = course::launch(command, options);
    if (!result.failure.empty()) std::cerr << "launch: " << result.failure << std::endl;
    return result.exit_code;
  } catch (const course::Error& e) {
    std::cerr << "launch: " << e.detail() << std::endl;
    return 2;
  }
}
