# SPDX-License-Identifier: Apache-2.0
# project_ghost_feedback: every entry point goes through scripts/env.sh (venv, colcon install
# space, DDS confined to loopback, own ROS_DOMAIN_ID).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
ENV := source scripts/env.sh
# Outer wall-clock limit of a whole test run (a hung rclpy teardown can hold the GIL, which no
# per-test timeout can break); pytest-timeout gives each test 900 s: a ceiling for a hung test,
# never a speed requirement (every wait inside a test is on progress, with its own ceiling).
PYTEST := timeout -k 10 3000 python -m pytest project_ghost_feedback/test -q --timeout=900 -rfEs --durations=25
# make test runs in two phases: every test not marked `serial` on TEST_WORKERS pytest-xdist workers
# (each in a ROS domain of its own: scripts/worker_domains.sh, conftest.py; a test module is one
# unit of work, taken in collection order: the modules with a test marked `long` first), then the
# `serial` tests (load-sensitive, or writing what every other test reads) alone in one process.
# Python keeps its bytecode (__pycache__, git-ignored) even where the shell says not to: the run
# starts hundreds of node processes, which would otherwise each compile the package again.
TEST_WORKERS := 2

.PHONY: help setup rosbag2 test test-fast demo lint bench clean distclean

help:
	@echo 'make demo   run the main job: ghost-feedback demo (options: make demo DEMO_ARGS="--seed 3")'
	@echo 'make test   set up if needed, then run all tests (what CI runs)'
	@echo 'make test-fast  the tests that need neither DDS nor a subprocess (about 3 minutes)'
	@echo 'make setup  create .venv (ROS 2 Jazzy wheels), colcon build into install/'
	@echo 'make rosbag2  build rosbag2 (ros2 bag, rosbag2_py) from third_party/, cached (cold: see docs/setup.md)'
	@echo 'make lint   ruff (ruff.toml) + license headers + mypy (mypy.ini)'
	@echo 'make bench  run the benchmarks in bench/ (figures only, never a gate)'
	@echo 'make clean  remove build/ install/ log/;  make distclean  also .venv/'

setup:
	@bash scripts/setup.sh

# rosbag2 (ros2 bag, rosbag2_py, MCAP storage) and what the wheels lack (rclcpp, pluginlib, ...), from
# unmodified Jazzy sources in third_party/ (UPSTREAM.md), built once and cached outside the clone.
# Stage 1: yaml-cpp 0.8 (yaml_cpp_vendor 9.0.1 needs >= 0.8; Debian 12 has 0.7); stage 2: the rest.
ROSBAG2_SOURCES := third_party/yaml-cpp-0.8.0.tar.gz --then \
  $(addprefix third_party/,yaml_cpp_vendor-9.0.1.tar.gz tinyxml2_vendor-0.9.1.tar.gz \
  console_bridge_vendor-1.7.1.tar.gz class_loader-2.7.0.tar.gz pluginlib-5.4.2.tar.gz \
  statistics_msgs-2.0.2.tar.gz libstatistics_collector-1.7.3.tar.gz rclcpp-28.1.6.tar.gz \
  keyboard_handler-0.3.1.tar.gz mcap-cpp-1.3.0.tar.gz readerwriterqueue-ef7dfbf.tar.gz \
  rosbag2-0.26.5.tar.gz)
ROSBAG2_DEBS := libtinyxml2-dev libconsole-bridge-dev libzstd-dev liblz4-dev libssl-dev
ROSBAG2_CMAKE_ARGS := -DYAML_BUILD_SHARED_LIBS=ON -DYAML_CPP_BUILD_TOOLS=OFF \
  -DFETCHCONTENT_SOURCE_DIR_MCAP=@SRC@/mcap \
  -DREADERWRITERQUEUE_SOURCE_DIR=@SRC@/readerwriterqueue \
  -DCMAKE_PROJECT_shared_queues_vendor_INCLUDE=@ROOT@/third_party/cmake/shared_queues_vendor_offline.cmake

rosbag2: setup
	@bash scripts/ros_sources.sh rosbag2 --skip-if-found rosbag2_py --apt '$(ROSBAG2_DEBS)' \
	  $(ROSBAG2_SOURCES) -- $(ROSBAG2_CMAKE_ARGS)

test: setup
	@$(ENV); source scripts/worker_domains.sh $(TEST_WORKERS); \
	unset PYTHONDONTWRITEBYTECODE; \
	echo "[test] ROS_DOMAIN_ID=$${ROS_DOMAIN_ID} ROS_AUTOMATIC_DISCOVERY_RANGE=$${ROS_AUTOMATIC_DISCOVERY_RANGE}" \
	  "workers=$${GHOST_FEEDBACK_WORKERS} (domains $${GHOST_FEEDBACK_WORKER_DOMAINS})"; \
	echo "[test] phase 1/2: the tests not marked serial, on $${GHOST_FEEDBACK_WORKERS} workers"; \
	rc1=0; $(PYTEST) -n "$${GHOST_FEEDBACK_WORKERS}" --dist loadscope --no-loadscope-reorder -m 'not serial' || rc1=$$?; \
	echo '[test] phase 2/2: the tests marked serial, one process'; \
	rc2=0; $(PYTEST) -m serial || rc2=$$?; \
	if [[ $$rc1 == 5 && $$rc2 == 5 ]]; then echo '[test] FAILED: pytest collected no tests' >&2; exit 1; fi; \
	rc=0; for phase_rc in $$rc1 $$rc2; do \
	  if [[ $$phase_rc != 0 && $$phase_rc != 5 && $$rc == 0 ]]; then rc=$$phase_rc; fi; done; \
	if [[ $$rc != 0 ]]; then echo "[test] FAILED (exit $$rc1 parallel, $$rc2 serial)" >&2; fi; \
	exit $$rc

test-fast: setup
	@$(ENV); GHOST_FEEDBACK_FAST=1 timeout -k 10 600 python -m pytest project_ghost_feedback/test \
	  -q --timeout=300 -p no:cacheprovider

demo: setup
	@$(ENV); ghost-feedback demo $(DEMO_ARGS)

lint: setup
	@$(ENV); python -m pytest project_ghost_feedback/test/system/test_lint.py project_ghost_feedback/test/system/test_flake8.py project_ghost_feedback/test/system/test_import_graph.py -q -rfEs && python -m mypy --config-file mypy.ini

bench: setup
	@$(ENV); shopt -s nullglob; benches=(bench/*_bench.py); \
	if (( $${#benches[@]} == 0 )); then echo '[bench] no benchmarks in bench/ yet'; exit 0; fi; \
	for bench in "$${benches[@]}"; do echo "[bench] $$bench"; timeout -k 10 1800 python "$$bench"; done

clean:
	rm -rf build install log

distclean: clean
	rm -rf .venv
