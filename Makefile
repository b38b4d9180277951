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
PYTEST := timeout -k 10 3000 python -m pytest project_ghost_feedback/test -q --timeout=900 -rfEs

.PHONY: help setup test test-fast demo lint bench clean distclean

help:
	@echo 'make demo   run the main job: ghost-feedback demo (options: make demo DEMO_ARGS="--seed 3")'
	@echo 'make test   set up if needed, then run all tests (what CI runs)'
	@echo 'make test-fast  the tests that need neither DDS nor a subprocess (about a minute)'
	@echo 'make setup  create .venv (ROS 2 Jazzy wheels), colcon build into install/'
	@echo 'make lint   ruff (ruff.toml) + license headers + mypy (mypy.ini)'
	@echo 'make bench  run the benchmarks in bench/ (figures only, never a gate)'
	@echo 'make clean  remove build/ install/ log/;  make distclean  also .venv/'

setup:
	@bash scripts/setup.sh

test: setup
	@$(ENV); echo "[test] ROS_DOMAIN_ID=$${ROS_DOMAIN_ID} ROS_AUTOMATIC_DISCOVERY_RANGE=$${ROS_AUTOMATIC_DISCOVERY_RANGE}"; \
	rc=0; $(PYTEST) || rc=$$?; \
	if [[ $$rc == 5 ]]; then echo '[test] FAILED: pytest collected no tests' >&2; exit 1; fi; \
	if [[ $$rc != 0 ]]; then echo "[test] FAILED (exit $$rc)" >&2; fi; \
	exit $$rc

test-fast: setup
	@$(ENV); GHOST_FEEDBACK_FAST=1 timeout -k 10 600 python -m pytest project_ghost_feedback/test \
	  -q --timeout=300 -p no:cacheprovider

demo: setup
	@$(ENV); ghost-feedback demo $(DEMO_ARGS)

lint: setup
	@$(ENV); python -m pytest project_ghost_feedback/test/test_lint.py -q -rfEs && python -m mypy --config-file mypy.ini

bench: setup
	@$(ENV); shopt -s nullglob; benches=(bench/*_bench.py); \
	if (( $${#benches[@]} == 0 )); then echo '[bench] no benchmarks in bench/ yet'; exit 0; fi; \
	for bench in "$${benches[@]}"; do echo "[bench] $$bench"; timeout -k 10 1800 python "$$bench"; done

clean:
	rm -rf build install log

distclean: clean
	rm -rf .venv
