// driver.cpp: see driver.h.
#include "driver.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "error.h"
#include "flag_checks.h"
#include "flags_across_ranks.h"
#include "handshake.h"
#include "launcher.h"
#include "link_spec.h"
#include "socket.h"

namespace course {

StoreClient& DriverContext::store() {
  if (!store_) throw ConfigError("this lesson runs in one process and has no store");
  return *store_;
}

std::string DriverContext::advertise_host() const {
  std::string forced = env_or("COURSE_ADVERTISE_ADDR", "");
  if (!forced.empty()) return forced;
  const std::string& m = env_.master_addr;
  if (m.empty() || m == "localhost" || m.rfind("127.", 0) == 0 || m == "::1") return "127.0.0.1";
  return host_name();
}

namespace {

int print_verdict(const std::string& name, const std::string& kind, const std::string& detail) {
  std::cout << std::flush;
  std::cout << name << ": " << kind << (detail.empty() ? "" : " ") << detail << std::endl;
  if (kind == "PASS") return 0;
  if (kind == "TODO") return 2;
  return 1;
}

// Rank 0 hosts the store, so it must leave last. Every other rank reports that it is done,
// which the store answers while rank 0 is still waiting; rank 0 waits for all of them
// before it closes the store, and names any rank that never comes (store.h).
void leave_store(DriverContext& ctx) {
  if (ctx.world() == 1) return;
  monitored_barrier(ctx.store(), "driver/exit", ctx.rank(), ctx.world(), default_timeout(),
                    /*wait_for_release=*/false);
}

// A TODO on one rank stops the others too: its sockets close as the exception unwinds,
// and the peers' next socket call fails. So that the first run of a lesson shows the TODO
// and nothing alarming, the rank that reached it publishes it in the store, and a rank
// whose error is a broken connection (a NetworkError) first asks the store for a TODO,
// waiting briefly (the TODO's rank publishes it only once it has unwound). Rank 0 hosts
// the store: it keeps it up a few seconds for the others to look.
constexpr Millis kTodoLookup{2'000};
constexpr Millis kStoreLinger{5'000};
const char* const kTodoKey = "driver/todo";

// After a TODO (ours or another rank's): leave as leave_store does, but never wait long.
void leave_store_after_todo(DriverContext& ctx) {
  if (ctx.world() == 1 || !ctx.store_) return;
  try {
    if (ctx.rank() != 0) {
      if (ctx.store_->add("driver/left", 1) == ctx.world() - 1)
        ctx.store_->set("driver/all_left", "1");
    } else {
      ctx.store_->get("driver/all_left", kStoreLinger);
    }
  } catch (const std::exception&) {
    // a rank still busy elsewhere, or the store already gone: nothing to wait for
  }
}

// "rank 2 reached a TODO (lessons/...:31)" if some rank published one, else "". Waits up
// to `wait` for it, and at most kStoreIoAfterError more for a store that does not answer:
// rank 0, which hosts it, may be the frozen rank this rank's error is about.
constexpr Millis kStoreIoAfterError{1'000};
std::string todo_elsewhere(DriverContext& ctx, Millis wait) {
  if (ctx.world() == 1 || !ctx.store_) return "";
  try {
    ctx.store_->set_io_timeout(kStoreIoAfterError);
    return ctx.store_->get(kTodoKey, wait);
  } catch (const std::exception&) {
    return "";
  }
}

// Runs rank_main, turning its outcome (or exception) into the verdict line and exit code.
// `flags`: this rank's flags, which every rank must share (flags_across_ranks.h).
int run_rank(const DriverConfig& config, DriverContext& ctx,
             const std::vector<std::pair<std::string, std::string>>& flags,
             const std::function<Verdict(DriverContext&)>& rank_main) {
  try {
    if (config.distributed) {
      // Name the rank in errors even when the rest of the environment is incomplete.
      const std::string rank_text =
          env_or("RANK", env_or("SLURM_PROCID", env_or("OMPI_COMM_WORLD_RANK", "")));
      if (!rank_text.empty() && rank_text.find_first_not_of("0123456789") == std::string::npos) {
        set_process_rank(std::stoi(rank_text));
      }
      ctx.env_ = read_dist_env();
      set_process_rank(ctx.env_.rank);
      // Rank 0 hosts the rendezvous store; it binds the port before anyone can dial it,
      // and the others retry their connection until it is up.
      if (ctx.env_.rank == 0) {
        ctx.server_ = std::make_unique<StoreServer>("0.0.0.0", ctx.env_.master_port, job_token());
      }
      ctx.store_ = std::make_unique<StoreClient>(ctx.env_.master_addr, ctx.env_.master_port,
                                                 ctx.env_.rank, job_token());
      // Ranks started by hand with different flags: a usage error, named on every rank.
      const std::string differs = flag_disagreement(*ctx.store_, ctx.rank(), ctx.world(), flags);
      if (!differs.empty()) {
        leave_store(ctx);
        print_verdict(config.name, "FAIL", "usage: " + differs);
        return kUsageExitCode;
      }
    }
    Verdict verdict = rank_main(ctx);
    if (config.distributed) leave_store(ctx);
    return print_verdict(config.name, verdict.passed ? "PASS" : "FAIL", verdict.detail);
  } catch (const NotImplementedError& e) {
    if (config.distributed && ctx.store_ && ctx.world() > 1) {
      try {
        ctx.store_->set(kTodoKey, "rank " + std::to_string(ctx.rank()) + " reached a TODO (" +
                                      e.location() + ")");
      } catch (const std::exception&) {
        // the store is gone: the others find out from the launcher's verdict
      }
      leave_store_after_todo(ctx);
    }
    return print_verdict(config.name, "TODO", e.location());
  } catch (const NetworkError& e) {
    // A TODO closes its rank's sockets: its peers see them closed, not a timeout, which
    // comes from a frozen or stuck peer. So after a timeout only a TODO already published
    // is looked for, and the verdict naming the frozen rank is not held up.
    const bool timed_out = dynamic_cast<const TimeoutError*>(&e) != nullptr;
    const std::string todo =
        config.distributed ? todo_elsewhere(ctx, timed_out ? Millis(0) : kTodoLookup) : "";
    if (todo.empty()) return print_verdict(config.name, "FAIL", e.what());
    leave_store_after_todo(ctx);
    std::cout << std::flush;
    std::cout << config.name << ": stopped: " << todo << std::endl;
    return 2;
  } catch (const std::exception& e) {
    return print_verdict(config.name, "FAIL", e.what());
  }
}

// Launches this executable as --np ranks and prints the overall verdict.
int launch_ranks(const DriverConfig& config, const DriverArgs& args, int argc, char** argv) {
  std::vector<std::string> cmd{self_executable()};
  for (int i = 1; i < argc; ++i) cmd.emplace_back(argv[i]);
  LaunchOptions options;
  options.nproc_per_node = args.np;
  LaunchResult result = launch(cmd, options);
  if (result.exit_code == 0) {
    const std::string& v = result.ranks.empty() ? std::string() : result.ranks[0].last_verdict;
    const std::string pass_prefix = config.name + ": PASS";
    std::string detail = v.rfind(pass_prefix, 0) == 0 ? v.substr(pass_prefix.size()) : "";
    if (!detail.empty() && detail[0] == ' ') detail.erase(0, 1);
    return print_verdict(config.name, "PASS",
                         detail + (detail.empty() ? "" : " ") + "(" + std::to_string(args.np) +
                             (args.np == 1 ? " rank)" : " ranks)"));
  }
  // A TODO anywhere wins: it tells the learner what to write next.
  const std::string todo_prefix = config.name + ": TODO ";
  for (const RankExit& r : result.ranks) {
    if (r.last_verdict.rfind(todo_prefix, 0) == 0) {
      return print_verdict(config.name, "TODO", r.last_verdict.substr(todo_prefix.size()));
    }
  }
  std::string detail = result.failure;
  if (result.first_failed >= 0 && result.first_failed < static_cast<int>(result.ranks.size())) {
    const std::string& v = result.ranks[result.first_failed].last_verdict;
    if (!v.empty()) detail += ": " + v;
  }
  print_verdict(config.name, "FAIL", detail);
  // Stopped by SIGINT or SIGTERM: 128 + the signal, as a shell reports it (130 for Ctrl-C).
  return result.first_failed < 0 && result.exit_code > 128 ? result.exit_code : 1;
}

}  // namespace

int run_driver(int argc, char** argv, const DriverConfig& config,
               const std::function<void(Flags&)>& add_options,
               const std::function<Verdict(DriverContext&)>& rank_main) {
  Flags flags(config.name + ": " + config.title);
  DriverContext ctx;
  DriverArgs& args = ctx.args_;
  args.np = config.distributed ? config.default_np : 1;
  if (config.distributed) {
    flags.option("--np", args.np, "number of ranks to launch when RANK is not set")
        .check(count_in(1, 64))
        .may_differ_across_ranks();  // a rank ignores it
  } else {
    // Accepted so that every driver takes the same flags; this lesson is one process.
    flags.option("--np", args.np, "this lesson runs in one process: only 1 is allowed")
        .check(count_in(1, 1));
  }
  if (!config.backends.empty()) {
    args.backend = config.backends.front();
    flags.option("--backend", args.backend, "process-group backend").check(one_of(config.backends));
  }
  if (config.has_bench) {
    flags.flag("--bench", args.bench, "run the benchmark");
    args.csv =
        config.bench_csv.empty() ? "bench-results/" + config.name + ".csv" : config.bench_csv;
    flags
        .option("--csv", args.csv,
                "--bench: the CSV file (<N> stands for the world size); a bench of several tables "
                "writes each beside it as STEM_<table>.csv")
        .check(writable(OutputPath::kFileInNewDirectory))
        .show_default();
    if (!config.bench_trace.empty()) {
      args.trace = config.bench_trace;
      flags
          .option("--trace", args.trace,
                  "--bench: the prefix of the timelines it draws (PREFIX_<schedule>.svg and .json)")
          .check(writable(OutputPath::kFileInNewDirectory))
          .show_default();
    }
  }
  if (config.has_link) {
    flags
        .option(
            "--link", args.link,
            "emulate a cluster link on the tcp transport: <bandwidth>[,<latency>[,<burst>]], e.g. "
            "10gbit,20us (the same as COURSE_LINK; sends are paced, the sender sleeps)")
        .check(FlagCheck{"LINK", [](const std::string& text) {
                           try {
                             parse_link(text);
                             return std::string();
                           } catch (const ConfigError& e) {
                             return std::string(e.what());
                           }
                         }});
  }
  if (add_options) add_options(flags);
  std::string problem;
  const Parsed parsed = flags.parse(argc, argv, problem);
  if (parsed == Parsed::kHelp) return 0;
  if (parsed == Parsed::kOk && config.check_flags) problem = config.check_flags(args);
  if (parsed == Parsed::kUsageError || !problem.empty()) {
    std::cerr << problem << "\nRun with --help for more information." << std::endl;
    print_verdict(config.name, "FAIL", "usage: " + problem + " (see --help)");
    return kUsageExitCode;
  }
  // Every rank (and the ranks this process launches) paces its sockets on this link.
  if (!args.link.empty()) ::setenv(kLinkEnv, args.link.c_str(), 1);
  if (config.distributed && !started_as_rank()) {
    try {
      return launch_ranks(config, args, argc, argv);
    } catch (const std::exception& e) {
      return print_verdict(config.name, "FAIL", e.what());
    }
  }
  if (!config.distributed) set_process_rank(0);
  return run_rank(config, ctx, flags.values(), rank_main);
}

std::string DriverContext::bench_csv() const {
  std::string path = args_.csv;
  const std::string world = std::to_string(env_.world_size);
  for (size_t at = path.find("<N>"); at != std::string::npos; at = path.find("<N>", at)) {
    path.replace(at, 3, world);
    at += world.size();
  }
  return path;
}

void print_driver_header(const DriverContext& ctx, const std::string& detail) {
  if (ctx.rank() != 0) return;
  std::cout << "backend " << ctx.args().backend << ", " << ctx.world() << " rank(s)"
            << (detail.empty() ? "" : ", " + detail) << std::endl;
}

std::optional<Verdict> self_check_failure(const DriverContext& ctx, const std::string& problem,
                                          const std::string& passed_line) {
  if (!problem.empty()) return Verdict::fail("self-check: " + problem);
  if (ctx.rank() == 0) std::cout << passed_line << std::endl;
  return std::nullopt;
}

}  // namespace course
