# The course's commands. This Makefile wraps CMake; see README.md and docs/maintainers.md.
#
#   make lessonNN [IMPL=lessons|solutions] [CHAIN=ref|mine]   build ./lessonNN here
#   make test       the whole suite on the reference, the stub build check, the grader's own
#                   tests and the docs build (no Doxygen warnings). It tests the reference
#                   and the given code, never lessons/: safe while you work through the course
#   make check-stubs  (maintainers, CI) lessons/ is what make_stubs.py generates
#   make demo       the capstone (lesson 11) on the reference code, 2 ranks
#   make setup      install missing Debian packages
#   make stubs      regenerate lessons/ stubs from solutions/
#   make format     clang-format every C++ file
#   make format-check  fail, naming the files, where clang-format would change something
#   make lint       clang-tidy (.clang-tidy) on every C++ file of the reference build
#                   (a file that passed is skipped while what it reads is unchanged;
#                   tools/lint_passed.txt, committed, says which passed, for a fresh
#                   machine); make lint-all lints every file
#   make grade      score the learner's code, every lesson (grade-lessonNN: one); grade.json
#   make docs       the Doxygen site in docs/html
#   make bench      the benchmarks on the reference code: nccl-tests tables, CSV and SVG
#                   under bench-results/ (BENCH_ARGS="-e 16M -n 10" to shorten a run)
#   make profile-test  where the last make test and make lint spent their time, and what
#                   they checked (build steps, tests, grader, clang-tidy by file)
#   make sanitize   the reference's tests under AddressSanitizer + UndefinedBehaviorSanitizer
#                   (build/asan), and the runtime and collective tests under ThreadSanitizer
#                   (build/tsan); sanitize-asan and sanitize-tsan run one part
# Sub-makes (CMake's Makefile generator) would print "Entering directory" around each step.
MAKEFLAGS += --no-print-directory
IMPL ?= lessons
CHAIN ?= ref
JOBS ?= $(shell nproc)
BUILD := build/$(IMPL)$(if $(filter mine,$(CHAIN)),-chain-mine,)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
# Tests run at once by `make test`: two more than the cores on the release build, where a
# third of the tests' time is spent waiting (for a peer, a grace period, a timeout they
# test): 859 tests took 127 s at -j2 and 97 s at -j4 on 2 cores, all passing (a few more,
# not twice the cores, on a big machine: a test of 8 ranks holds 8 processes' memory); the
# cores under the sanitizers, which leave less idle (and CI's lint uses what is left).
TEST_JOBS ?= $(if $(SANITIZE),$(JOBS),$(shell echo $$(( $(JOBS) + 2 ))))
# Ninja when it is installed (make setup installs it): it schedules the 2 cores better than
# Make and rebuilds only what changed faster. A build directory keeps the generator it was
# first configured with.
GENERATOR := $(if $(shell command -v ninja 2>/dev/null),-G Ninja,)
# The generator flag for build directory $(1), only when it has not been configured yet.
generator_for = $(if $(wildcard $(1)/CMakeCache.txt),,$(GENERATOR))
# One build step: progress each tenth, warnings and errors, the whole log in DIR/build.log.
BUILD_STEP = JOBS=$(JOBS) python3 tools/build_step.py
LESSONS := $(sort $(notdir $(wildcard solutions/[0-9][0-9]_* lessons/[0-9][0-9]_*)))
LESSON_NUMS := $(foreach l,$(LESSONS),$(firstword $(subst _, ,$(l))))
# The demo is the capstone, lesson 11, on 2 ranks with its default data and epochs.
DEMO_LESSON ?= 11
DEMO_ARGS ?= --np 2

.PHONY: setup configure stubs check-stubs check-tree test test-tools bench-link test-build test-reference \
        test-reference-and-grader test-stub-builds demo format \
        clean launch $(addprefix lesson,$(LESSON_NUMS)) grade test-grader check-classroom \
        classroom docs bench format-check lint sanitize sanitize-asan sanitize-tsan configure-asan \
        profile-test lint-all

setup:
	@bash tools/setup.sh

# Configures once (a build reconfigures itself when a CMakeLists changes), then prints one
# line: what this build directory is. CMAKE_FLAGS forces a new configure.
configure: setup
	@mkdir -p $(BUILD)
	@if [ ! -f $(BUILD)/CMakeCache.txt ] || [ -n "$(CMAKE_FLAGS)" ]; then \
	  cmake -S . -B $(BUILD) $(call generator_for,$(BUILD)) -DIMPL=$(IMPL) -DCHAIN=$(CHAIN) $(CMAKE_FLAGS) >$(BUILD)/configure.log 2>&1 \
	    || { grep -E "Error|error" -A5 $(BUILD)/configure.log | head -40; \
	         echo "make: configuring $(BUILD) failed (the whole log: $(BUILD)/configure.log)"; exit 1; }; \
	  grep -E "CMake Warning" -A3 $(BUILD)/configure.log || true; \
	  echo "configured $(BUILD): $$(sed -n 's/^-- course: //p' $(BUILD)/configure.log | paste -sd'|' | sed 's/|/; /g')"; \
	fi
	@test -f $(BUILD)/CMakeCache.txt

$(addprefix lesson,$(LESSON_NUMS)): lesson%: configure
	@$(BUILD_STEP) $(BUILD) lesson$* lesson$* \
	 || { echo "make: lesson$* did not build (the errors above)"; exit 1; }
	@cp -f $(BUILD)/lesson$* ./lesson$*
	@echo "built ./lesson$* ($(IMPL)$(if $(filter mine,$(CHAIN)), chain=mine,))"

launch: configure
	@cmake --build $(BUILD) -j $(JOBS) --target launch >/dev/null
	@cp -f $(BUILD)/launch ./launch && echo "built ./launch"

# A learner's copy (tools/export_learner.sh) has no solutions/: nothing to generate from.
stubs:
	@test -d solutions || { echo "make stubs: no solutions/ in a learner's copy"; exit 1; }
	@python3 tools/make_stubs.py

# Maintainers and CI (.ci/run): the committed lessons/ stubs are what solutions/ generates.
# In a tree where someone works through the course, lessons/ holds their answers and differs.
check-stubs:
	@if [ -d solutions ]; then python3 tools/make_stubs.py --check; \
	 else echo "check-stubs: skipped (a learner's copy has no solutions/)"; fi

# SANITIZE=asan, what CI runs: `make test` on the reference's AddressSanitizer and
# UndefinedBehaviorSanitizer build (build/asan, -O1 -g1, CUDA compiled too) instead of the
# release build, so one build serves what took two (`make test`, then `make sanitize-asan`):
# every CTest test, every stub driver and the grader's tests, learner's copy included, run
# under the sanitizers. Without it (what a learner types), the release build build/solutions.
SANITIZE ?=
ifeq ($(SANITIZE),asan)
REF_BUILD := build/asan
else ifeq ($(SANITIZE),)
REF_BUILD := build/solutions
else
$(error SANITIZE must be asan or empty, not '$(SANITIZE)')
endif

# The reference build (test-build), then every registered test (test-reference).
test-build: setup
ifeq ($(SANITIZE),asan)
	@$(MAKE) configure-asan
	@echo "make test: building $(REF_BUILD) under the sanitizers (the first time: 5 to 11 minutes on 2 cores)"
else
	@$(MAKE) configure IMPL=solutions CHAIN=ref
	@echo "make test: building $(REF_BUILD) (the first time: 2.5 to 6 minutes on 2 cores)"
endif
	@$(BUILD_STEP) $(REF_BUILD) "make test" \
	 || { echo "make test: the reference build failed (the errors above)"; exit 1; }

CTEST_RUN = cd $(REF_BUILD) && ctest -j $(TEST_JOBS) --output-on-failure --timeout $(if $(SANITIZE),600,300) $(CTEST_FLAGS)

test-reference: test-build
	@$(CTEST_RUN)

# What make test runs once the build is there: CTest, and the grader's self-test beside it
# (test-grader, at nice 10, so CTest's tests keep the cores they ask for). Neither reads
# what the other writes; a third of CTest's time is spent waiting (peers, grace periods,
# the timeouts it tests) and so is much of the grader's (sabotaged tests wait for theirs).
# On 2 cores the gain is small, both being mostly CPU (a fresh clone: 11 min 23 s against
# 11 min 47 s one after the other; at the same priority as CTest, 11 min 52 s), more with
# more cores. The grader's output is kept in $(REF_BUILD)/test-grader.log and printed when
# both have ended; either failing fails this.
test-reference-and-grader: test-build
	@log=$(REF_BUILD)/test-grader.log; \
	 ( nice -n 10 $(MAKE) test-grader >$$log 2>&1; echo $$? >$$log.rc ) & grader=$$!; \
	 ctest_rc=0; ( $(CTEST_RUN) ) || ctest_rc=$$?; \
	 echo "make test: CTest ended; the grader's self-test (beside it):"; \
	 wait $$grader; cat $$log; grader_rc=$$(cat $$log.rc); \
	 [ $$ctest_rc -eq 0 ] || { echo "make test: CTest failed (above the grader's output)"; exit 1; }; \
	 [ "$$grader_rc" = 0 ] || { echo "make test: the grader's self-test failed"; exit 1; }

# Every lesson's stubs build, and its driver stops at a TODO naming lessons/. The stubs are
# generated from solutions/ into the build (ex_NN_stubs), so answers written in lessons/
# do not change this check. A learner's copy has no solutions/ to generate them from.
test-stub-builds: test-build
	@if [ -d solutions ]; then bash tests/tools/stub_drivers_test.sh $(REF_BUILD) $(LESSONS); \
	 else echo "test-stub-builds: skipped (a learner's copy: lessons/ holds your code)"; fi

# The scripts' own tests (tests/tools): tools/shaped_link.sh's argument checks, and as
# root its namespaces, shaping and clean-up (skipped, with the reason, elsewhere); what
# tools/lint.py's verdict cache key holds.
test-tools: setup
	@bash tests/tools/shaped_link_test.sh
	@python3 tests/tools/lint_key_test.py

# The grader (tools/grade.py) on the stubs, the reference and sabotaged code.
test-grader: setup
	@if [ -d solutions ]; then GRADER_TEST_REFERENCE=$(REF_BUILD) \
	   $(if $(SANITIZE),GRADER_TEST_COPY_CXX_FLAGS="$(ASAN_COPY_CXX)" GRADER_TEST_COPY_LINK_FLAGS="$(ASAN_CXX)") \
	   python3 tests/grader/test_grader.py; \
	 else echo "test-grader: skipped (a learner's copy has no solutions/)"; fi

# The tree's shape (tools/check_tree.py): common/'s rooms include only downwards
# (runtime < tensor, comm < data, check < backends, bench), no source file over 450 lines.
check-tree:
	@python3 tools/check_tree.py

check-classroom:
	@python3 tools/classroom.py --check

classroom:
	@python3 tools/classroom.py

# Scores the learner's code: lesson NN from lessons/, earlier lessons from the reference.
# `make grade` succeeds whatever the score; grade-lessonNN fails unless every test passes
# (GitHub Classroom awards a lesson's points on exit 0). GRADE_FLAGS: see tools/grade.py -h.
grade: setup
	@python3 tools/grade.py --impl $(IMPL) $(GRADE_FLAGS) || [ $$? -eq 1 ]

grade-%: setup
	@python3 tools/grade.py --impl $(IMPL) --lesson $* $(GRADE_FLAGS)

docs: setup
	@python3 tools/make_docs.py

# Lesson 05's all-reduce benchmark (naive, ring, gloo, and the link's ceiling) at 2 and 4
# ranks, from the reference build: it does not touch the learner's ./lessonNN. Each run
# writes bench-results/lesson05_npN.csv and redraws bench-results/lesson05_busbw.svg from
# every CSV there. docs/img/lesson05_busbw.svg is the copy the README shows. Lesson 02's
# point-to-point latency and bandwidth (against the raw socket) go to bench-results/lesson02.csv.
# Lesson 08's DataParallel table (one thread vs 1, 2, ... devices) goes to bench-results/lesson08.md
# (and lesson08_dp.csv). Every bench takes the driver's --csv (docs/architecture.md, "Drivers").
# Lesson 09's table (one process, DataParallel, naive DDP per backend and variant) goes to
# bench-results/lesson09_compare_np2.csv.
# Lesson 10's DDP sweep (bucket caps, naive DDP, no_sync) writes lesson10_buckets.csv/.svg
# on loopback, then again on emulated 10 Gbit/s and 1 Gbit/s links (--link: the tcp
# transport paces its sends, common/comm/emulated_link.h) as lesson10_buckets_<link>.csv/.svg,
# and a 48-layer MLP of 98 small parameters on the 1 Gbit/s link (lesson10_buckets_deep_1gbit);
# then PyTorch's own DDP on the same model (tools/torch_ddp_bench.py) when torch is installed.
# Lesson 12's table (the ring over tcp and over shm, Gloo, both links' ceilings) at 2 and 4
# ranks writes bench-results/lesson12_npN.csv. Lesson 13's (DDP and ZeRO stages 1-3: memory
# per rank, values sent, step time) at 2 and 4 ranks and on the 1 Gbit/s link writes
# bench-results/lesson13_*.csv. Lesson 15's (TP 1, 2 and 4 per batch: step time, bytes and
# memory against its cost model, the crossover) on loopback and 10 Gbit/s writes
# bench-results/lesson15_*.txt and lesson15_tp*.csv. Lesson 16's (GPipe and 1F1B: the bubble against
# (P-1)/(M+P-1), activation memory, the balance) at 2 and 4 stages and on the 10 Gbit/s
# link writes bench-results/lesson16_*.csv and the timelines lesson16_*_{gpipe,1f1b}.svg.
# Lesson 17's (naive against tiled attention for S = 64 to 1024: time and the bytes kept for
# backward against their formulas; the GPT's training step: tokens/s and FLOP/s against the
# machine's sgemm; what the step keeps, by node) writes
# bench-results/lesson17_{attention,training,saved}.csv and lesson17_attention.svg; then
# PyTorch's step on the same model and batch (tools/torch_gpt.py bench) when torch is installed.
# Lesson 18's (the activation ledger against its formula; memory per rank in fp32 and mixed
# precision, with ZeRO's stages; step time under each recomputation policy; the largest batch
# within a budget; fp16's flushed gradients and four short runs' loss curves) writes
# bench-results/lesson18_*.csv and lesson18_loss.svg. Lesson 19's (ring attention and Ulysses
# on 2 and 4 ranks, on loopback and 10 Gbit/s: the causal balance, time, bytes against the
# models, activations per rank) writes bench-results/lesson19_*.csv (the link's run
# lesson19_10gbit_*.csv).
BENCH_ARGS ?=
bench: setup
	@$(MAKE) configure IMPL=solutions CHAIN=ref
	@$(BUILD_STEP) build/solutions "make bench" lesson05 lesson02 lesson08 lesson09 lesson10 lesson12 \
	  lesson13 lesson14 lesson15 lesson16 lesson17 lesson18 lesson19 launch
	@rm -f bench-results/lesson05_np*.csv
	build/solutions/lesson05 --bench --np 2 $(BENCH_ARGS)
	build/solutions/lesson05 --bench --np 4 $(BENCH_ARGS)
	build/solutions/lesson02 --bench --np 2
	@mkdir -p bench-results
	build/solutions/lesson08 --bench > bench-results/lesson08.md && cat bench-results/lesson08.md
	build/solutions/lesson09 --compare --np 2
	build/solutions/lesson10 --bench --np 2
	build/solutions/lesson10 --bench --np 2 --link 10gbit,20us \
	  --csv bench-results/lesson10_buckets_10gbit.csv --svg bench-results/lesson10_buckets_10gbit.svg
	build/solutions/lesson10 --bench --np 2 --link 1gbit,50us \
	  --csv bench-results/lesson10_buckets_1gbit.csv --svg bench-results/lesson10_buckets_1gbit.svg
	build/solutions/lesson10 --bench --np 2 --link 1gbit,50us --bench-hidden 256 --bench-layers 48 \
	  --bench-batch 512 --csv bench-results/lesson10_buckets_deep_1gbit.csv \
	  --svg bench-results/lesson10_buckets_deep_1gbit.svg
	@if /usr/bin/python3 -c "import torch" 2>/dev/null; then \
	  build/solutions/launch --np 2 --no-prefix -- /usr/bin/python3 tools/torch_ddp_bench.py; \
	else echo "make bench: PyTorch not installed (apt-get install python3-torch): no torch DDP rows"; fi
	build/solutions/lesson12 --bench --np 2 $(BENCH_ARGS)
	build/solutions/lesson12 --bench --np 4 $(BENCH_ARGS)
	build/solutions/lesson13 --bench --np 2 --csv bench-results/lesson13_np2.csv
	build/solutions/lesson13 --bench --np 4 --csv bench-results/lesson13_np4.csv
	build/solutions/lesson13 --bench --np 2 --link 1gbit,50us --csv bench-results/lesson13_1gbit.csv
	build/solutions/lesson14 --bench --np 2 --csv bench-results/lesson14_loopback.csv
	build/solutions/lesson14 --bench --np 2 --link 10gbit,20us --csv bench-results/lesson14_10gbit.csv
	build/solutions/lesson14 --bench --np 2 --link 1gbit,50us --csv bench-results/lesson14_1gbit.csv
	build/solutions/lesson14 --bench --np 4 --link 1gbit,50us --csv bench-results/lesson14_1gbit_np4.csv
	build/solutions/lesson15 --bench --np 4 > bench-results/lesson15_loopback.txt; \
	  s=$$?; cat bench-results/lesson15_loopback.txt; exit $$s
	build/solutions/lesson15 --bench --np 4 --link 10gbit,20us --csv bench-results/lesson15_tp_10gbit.csv \
	  > bench-results/lesson15_10gbit.txt; \
	  s=$$?; cat bench-results/lesson15_10gbit.txt; exit $$s
	build/solutions/lesson16 --bench --np 2 --csv bench-results/lesson16_np2.csv \
	  --trace bench-results/lesson16_np2_timeline
	build/solutions/lesson16 --bench --np 4 --csv bench-results/lesson16_np4.csv \
	  --trace bench-results/lesson16_np4_timeline
	build/solutions/lesson16 --bench --np 4 --link 10gbit,20us --csv bench-results/lesson16_np4_10gbit.csv \
	  --trace bench-results/lesson16_np4_10gbit_timeline
	build/solutions/lesson17 --bench
	@if /usr/bin/python3 -c "import torch" 2>/dev/null; then /usr/bin/python3 tools/torch_gpt.py bench; \
	else echo "make bench: PyTorch not installed (apt-get install python3-torch): no torch GPT row"; fi
	build/solutions/lesson18 --bench
	build/solutions/lesson19 --bench --np 2
	build/solutions/lesson19 --bench --np 4
	build/solutions/lesson19 --bench --np 4 --link 10gbit,20us --csv bench-results/lesson19_10gbit.csv
	@if [ "$$(id -u)" -eq 0 ]; then $(MAKE) --no-print-directory bench-link; \
	 else echo "make bench: the kernel-shaped link (make bench-link) skipped: it needs root"; fi
	@echo "make bench: CSV and SVG in bench-results/"

# The kernel's shaped link (as root): two network namespaces joined by veth pairs whose
# egress tbf limits to LINK_RATES (tools/shaped_link.sh), one rank in each. On each rate,
# for lesson 10's bench model and a 48-layer one: lesson 10's sweep and PyTorch's DDP (when
# torch imports) on the kernel's link, the sweep on the course's emulated --link at the same
# rate (as a wire, and with tbf's burst), and their agreement row by row; lesson 05's ring
# beside Gloo; on 1gbit, lesson 14's hooks beside torch's (tools/bench_link.sh says more).
LINK_RATES ?= 10gbit 1gbit
bench-link: setup
	@[ "$$(id -u)" -eq 0 ] || { echo "make bench-link: needs root (network namespaces)"; exit 1; }
	@$(MAKE) configure IMPL=solutions CHAIN=ref
	@$(BUILD_STEP) build/solutions "make bench-link" lesson05 lesson10 lesson14 launch
	@bash tools/bench_link.sh build/solutions $(LINK_RATES)

# Sanitizers. Separate build trees of the reference code, so the ordinary build stays fast.
# The ASan tree compiles the CUDA code as the release tree does (nvcc's objects are not
# instrumented; protect_shadow_gap=0 lets the CUDA driver map its memory where a GPU is);
# TSan's goes without CUDA. They compile at -O1 with line tables
# (-g1), as the sanitizers' own documentation advises: the reports name file and line, and
# the build costs about half of -O2 -g. Any report fails the run: UBSan and ASan
# abort at the first one, TSan exits 66; inside a forked rank the harness turns that exit
# into a failure of the test (tests/harness/harness.cpp). handle_segv=0: a crash stays a
# signal, which is what the tests of crashing ranks expect. ASan builds what the tests run
# (the test programs, the drivers, the launch tool), not the stubs. SAN_TARGETS / SAN_LABELS
# pick less to build and run (e.g. SAN_TARGETS="test_common test_06" SAN_LABELS="common|lesson06").
SAN_FLAGS := -DIMPL=solutions -DCHAIN=ref -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1"
ASAN_CXX := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# The grader's learner copy under SANITIZE=asan (tests/grader/test_grader.py): ASan only, so
# its sabotaged null-pointer write still crashes as a learner's would.
ASAN_COPY_CXX := -fsanitize=address -fno-omit-frame-pointer
TSAN_CXX := -fsanitize=thread -fno-omit-frame-pointer
SAN_TARGETS ?= test_common $(foreach n,$(LESSON_NUMS),test_$(n) lesson$(n)) launch
SAN_LABELS ?=
TSAN_TARGETS ?= test_common test_02 test_03 test_04 test_05
TSAN_LABELS ?= ^(common|lesson0[2-5])$$
# The large-message cases (32 MiB per rank) are left out of TSan: its 5-15x slowdown puts
# them past their fixed deadlock timeouts (10 s a socket, 25 s a case) on a busy machine.
# The same collectives and the ring's sender thread run in the other cases at smaller sizes.
TSAN_EXCLUDE ?= Large
export ASAN_OPTIONS ?= detect_leaks=0:halt_on_error=1:handle_segv=0:protect_shadow_gap=0
export UBSAN_OPTIONS ?= print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS ?= halt_on_error=0:exitcode=66:second_deadlock_stack=1:handle_segv=0

sanitize: sanitize-asan sanitize-tsan
	@echo "make sanitize: no sanitizer report"

configure-asan: setup
	@mkdir -p build && cmake -S . -B build/asan $(call generator_for,build/asan) $(SAN_FLAGS) -DCMAKE_CXX_FLAGS="$(ASAN_CXX)" \
	  >/dev/null 2>build/asan.configure.err || { cat build/asan.configure.err; exit 1; }

sanitize-asan: configure-asan
	@$(BUILD_STEP) build/asan "make sanitize-asan" $(SAN_TARGETS)
	@cd build/asan && ctest -j $(JOBS) --output-on-failure --timeout 600 $(if $(SAN_LABELS),-L "$(SAN_LABELS)",)

sanitize-tsan: setup
	@mkdir -p build && cmake -S . -B build/tsan $(call generator_for,build/tsan) $(SAN_FLAGS) -DCOURSE_ENABLE_CUDA=OFF -DCMAKE_CXX_FLAGS="$(TSAN_CXX)" \
	  >/dev/null 2>build/tsan.configure.err || { cat build/tsan.configure.err; exit 1; }
	@$(BUILD_STEP) build/tsan "make sanitize-tsan" $(TSAN_TARGETS)
	@cd build/tsan && ctest -j $(JOBS) --output-on-failure --timeout 600 -L "$(TSAN_LABELS)" \
	  $(if $(TSAN_EXCLUDE),-E "$(TSAN_EXCLUDE)",)

test: setup format-check check-tree check-classroom test-reference-and-grader test-stub-builds test-tools docs
	@echo "make test: all checks passed"

demo: setup
	@$(MAKE) lesson$(DEMO_LESSON) IMPL=solutions
	./lesson$(DEMO_LESSON) $(DEMO_ARGS)

CXX_FILES = find common lessons solutions tests tools -name '*.cpp' -o -name '*.h' -o -name '*.cu'

format:
	@$(CXX_FILES) | xargs clang-format -i

# The learner's exercise files are left out (a learner's answers need not be formatted for
# `make test` to pass); their reference twins in solutions/ are checked instead. In a
# learner's copy (no solutions/) lessons/ is left out altogether.
format-check:
	@$(CXX_FILES) | while read -r f; do \
	  case "$$f" in lessons/*) [ -d solutions ] && [ ! -f "solutions/$${f#lessons/}" ] || continue ;; esac; \
	  echo "$$f"; done | xargs -r clang-format --dry-run -Werror
	@echo "format-check: every C++ file of the course is clang-formatted"

# clang-tidy over the reference build's compile_commands.json: every .cpp of common/,
# lessons/, solutions/, tests/ and tools/ (CUDA files aside), the stubs of lessons/ aside
# (tools/lint.py), the longest first, as many at a time as JOBS, and a file that
# passed not again while nothing it includes changed (tools/lint.py: the machine's cache,
# and tools/lint_passed.txt, which each run rewrites: commit it with the change, and a
# fresh machine lints only the files changed since; `make lint-all` lints everything and
# writes it anew). LINT_FILES narrows it to a regex of paths, e.g.
# LINT_FILES='common/comm/.*'. tests/.clang-tidy says why the tests go without the analyzer.
LINT_FILES ?= (common|lessons|solutions|tests|tools)/.*\.cpp
CLANG_TIDY ?= clang-tidy
lint: setup check-tree
	@$(MAKE) --no-print-directory configure IMPL=solutions CHAIN=ref
	@python3 tools/lint.py build/solutions '$(LINT_FILES)$$' --jobs $(JOBS) --clang-tidy $(CLANG_TIDY)

# Every file again, whatever the cache holds (what a machine without one does).
lint-all:
	@COURSE_LINT_CACHE=off $(MAKE) --no-print-directory lint

# Where the last `make test` (SANITIZE=asan: CI's) and `make lint` spent their time: build
# steps by target and file, tests by label and the slowest, the grader's tests and planted
# mistakes, clang-tidy by folder and file, and the count of every kind of check
# (tools/profile_test.py; it runs nothing).
profile-test:
	@python3 tools/profile_test.py $(REF_BUILD)

clean:
	rm -rf build lesson[0-9][0-9] launch grade.json docs/html
