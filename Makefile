# The course's commands. This Makefile wraps CMake; see README.md and COURSE.md.
#
#   make lessonNN [IMPL=lessons|solutions] [CHAIN=ref|mine]   build ./lessonNN here
#   make test       the whole suite on the reference, the stub check, the stub build check,
#                   the grader's own tests and the docs build (no Doxygen warnings)
#   make demo       the capstone (lesson 11) on the reference code, 2 ranks
#   make setup      install missing Debian packages
#   make stubs      regenerate lessons/ stubs from solutions/
#   make format     clang-format every C++ file
#   make grade      score the learner's code, every lesson (grade-lessonNN: one); grade.json
#   make docs       the Doxygen site in docs/html
#   make bench      the benchmarks on the reference code: nccl-tests tables, CSV and SVG
#                   under bench-results/ (BENCH_ARGS="-e 16M -n 10" to shorten a run)
IMPL ?= lessons
CHAIN ?= ref
JOBS ?= $(shell nproc)
BUILD := build/$(IMPL)$(if $(filter mine,$(CHAIN)),-chain-mine,)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
LESSONS := $(sort $(notdir $(wildcard solutions/[0-9][0-9]_* lessons/[0-9][0-9]_*)))
LESSON_NUMS := $(foreach l,$(LESSONS),$(shell echo $(l) | cut -c1-2))
# The demo is the capstone, lesson 11, on 2 ranks with its default data and epochs.
DEMO_LESSON ?= 11
DEMO_ARGS ?= --np 2

.PHONY: setup configure stubs check-stubs test test-reference test-stub-builds demo format \
        clean launch $(addprefix lesson,$(LESSON_NUMS)) grade test-grader check-classroom \
        classroom docs bench

setup:
	@bash tools/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -DIMPL=$(IMPL) -DCHAIN=$(CHAIN) $(CMAKE_FLAGS) \
	  | grep -E "^-- course:|Error|error|Warning" || true
	@test -f $(BUILD)/CMakeCache.txt

$(addprefix lesson,$(LESSON_NUMS)): lesson%: configure
	@cmake --build $(BUILD) -j $(JOBS) --target lesson$* 2>&1 | grep -vE "^\[|^-- |Consolidate" || true
	@test -x $(BUILD)/lesson$* || { echo "make: lesson$* did not build (see the errors above)"; exit 1; }
	@cp -f $(BUILD)/lesson$* ./lesson$*
	@echo "built ./lesson$* ($(IMPL)$(if $(filter mine,$(CHAIN)), chain=mine,))"

launch: configure
	@cmake --build $(BUILD) -j $(JOBS) --target launch >/dev/null
	@cp -f $(BUILD)/launch ./launch && echo "built ./launch"

# A learner's copy (tools/export_learner.sh) has no solutions/: nothing to generate from.
stubs:
	@test -d solutions || { echo "make stubs: no solutions/ in a learner's copy"; exit 1; }
	@python3 tools/make_stubs.py

check-stubs:
	@if [ -d solutions ]; then python3 tools/make_stubs.py --check; \
	 else echo "check-stubs: skipped (a learner's copy has no solutions/)"; fi

# The reference build and every registered test.
test-reference: setup
	@$(MAKE) --no-print-directory configure IMPL=solutions CHAIN=ref
	@cmake --build build/solutions -j $(JOBS)
	@cd build/solutions && ctest -j $(JOBS) --output-on-failure --timeout 300 $(CTEST_FLAGS)

# Every lesson's stub tree builds, and its driver stops at a TODO naming lessons/.
# (The reference tree builds every ex_NN_mine library and a lessonNN_stubs driver too.)
test-stub-builds: test-reference
	@bash tools/check_stub_drivers.sh build/solutions $(LESSONS)

# The grader (tools/grade.py) on the stubs, the reference and sabotaged code.
test-grader: setup
	@if [ -d solutions ]; then python3 tests/grader/test_grader.py; \
	 else echo "test-grader: skipped (a learner's copy has no solutions/)"; fi

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
# Lesson 08's DataParallel table (one thread vs 1, 2, ... devices) goes to bench-results/lesson08.md.
# Lesson 09's table (one process, DataParallel, naive DDP per backend and variant) goes to
# bench-results/lesson09_compare_np2.csv.
# Lesson 10's DDP sweep (bucket caps, naive DDP, no_sync) writes lesson10_buckets.csv/.svg.
BENCH_ARGS ?=
bench: setup
	@$(MAKE) --no-print-directory configure IMPL=solutions CHAIN=ref
	@cmake --build build/solutions -j $(JOBS) --target lesson05 lesson02 lesson08 lesson09 lesson10 2>&1 | grep -E "error|Error" || true
	@rm -f bench-results/lesson05_np*.csv
	build/solutions/lesson05 --bench --np 2 $(BENCH_ARGS)
	build/solutions/lesson05 --bench --np 4 $(BENCH_ARGS)
	build/solutions/lesson02 --bench --np 2 --csv bench-results/lesson02.csv
	@mkdir -p bench-results
	build/solutions/lesson08 --bench > bench-results/lesson08.md && cat bench-results/lesson08.md
	build/solutions/lesson09 --compare --np 2
	build/solutions/lesson10 --bench --np 2
	@echo "make bench: CSV and SVG in bench-results/"

test: setup check-stubs check-classroom test-reference test-stub-builds test-grader docs
	@echo "make test: all checks passed"

demo: setup
	@$(MAKE) --no-print-directory lesson$(DEMO_LESSON) IMPL=solutions
	./lesson$(DEMO_LESSON) $(DEMO_ARGS)

format:
	@find common lessons solutions tests tools -name '*.cpp' -o -name '*.h' -o -name '*.cu' \
	  | xargs clang-format -i

clean:
	rm -rf build lesson[0-9][0-9] launch grade.json docs/html
