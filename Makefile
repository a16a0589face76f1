# rovertrain: `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_ROOT ?= demo-data

.PHONY: install browser test test-slow test-reliability lint format docs demo bench clean

install: $(STAMP) browser

$(STAMP): pyproject.toml packages/rovertrain-runtime/pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e packages/rovertrain-runtime \
	  -e '.[dev,report,deploy,import,rosbag,review,bench,sim]'
	touch $(STAMP)

# tests/review drive the review page in the distribution's Chromium, never a downloaded one.
# As root on Debian it is installed here; elsewhere this says what to install (and
# tests/review fail, loudly, until it is there).
CHROMIUM ?= /usr/bin/chromium
browser:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get > /dev/null; then \
	    echo "installing Debian's chromium for tests/review (apt-get, log in /tmp/rovertrain-apt.log)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    { apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; } \
	      > /tmp/rovertrain-apt.log 2>&1 || { tail -20 /tmp/rovertrain-apt.log >&2; exit 1; }; \
	  else \
	    echo "WARNING: tests/review need Chromium at $(CHROMIUM): install the distribution's chromium package" >&2; \
	  fi; \
	fi

lint: install
	$(BIN)/ruff check src tests bench tools
	$(BIN)/ruff format --check src tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache > /dev/null || $(BIN)/lint-imports --no-cache

format: install
	$(BIN)/ruff format src tests bench tools
	$(BIN)/ruff check --fix src tests bench tools

# The generated parts of README.md: the architecture block (the modules and their docstrings)
# and the settings tables (the knobs' declarations). Tests fail when either drifts.
docs: install
	$(BIN)/python tools/readme_architecture.py --write README.md
	$(BIN)/python -m rovertrain.job.schema --write-readme README.md

test: lint
	$(BIN)/pytest -q -n 2 --dist load

test-slow: install
	$(BIN)/pytest -q -m slow -rP

test-reliability: install
	$(BIN)/pytest -q tests/reliability -m 'not slow'
	$(BIN)/pytest -q tests/reliability -m long

demo: install
	rm -rf $(DEMO_ROOT)
	$(BIN)/rovertrain synth --out $(DEMO_ROOT) --sessions 12 --minutes 2 --seed 7 > /dev/null
	$(BIN)/rovertrain run --job $(DEMO_ROOT)/job.json > $(DEMO_ROOT)/events.ndjson && \
	  $(BIN)/python -m rovertrain.cli.summary $(DEMO_ROOT)/events.ndjson
	job_dir=$$($(BIN)/python -m rovertrain.cli.summary --job-dir $(DEMO_ROOT)/events.ndjson) && \
	  $(BIN)/rovertrain report "$$job_dir" --out $(DEMO_ROOT)/report.png > /dev/null && \
	  echo "dashboard written to $(DEMO_ROOT)/report.png"
	checkpoint=$$($(BIN)/python -m rovertrain.cli.summary --checkpoint $(DEMO_ROOT)/events.ndjson) && \
	  session=$$($(BIN)/python -m rovertrain.cli.summary --held-out $(DEMO_ROOT)/events.ndjson) && \
	  $(BIN)/rovertrain export "$$checkpoint" --out $(DEMO_ROOT)/policy > $(DEMO_ROOT)/export.ndjson && \
	  $(BIN)/rovertrain replay $(DEMO_ROOT)/policy $(DEMO_ROOT) "$$session" --out $(DEMO_ROOT)/replay \
	    > $(DEMO_ROOT)/replay.ndjson && \
	  $(BIN)/python -m rovertrain.cli.summary --replay $(DEMO_ROOT)/replay.ndjson && \
	  echo "model exported to $(DEMO_ROOT)/policy; replay of held-out $$session in $(DEMO_ROOT)/replay/ (timeline.png, overlay.mp4)" && \
	  $(BIN)/rovertrain replay $(DEMO_ROOT)/policy $(DEMO_ROOT) "$$session" --own-history \
	    > $(DEMO_ROOT)/replay-own.ndjson && \
	  $(BIN)/python -m rovertrain.cli.summary --replay $(DEMO_ROOT)/replay-own.ndjson
	$(BIN)/rovertrain drive $(DEMO_ROOT)/policy --world road --seeds 3 --seconds 60 --out $(DEMO_ROOT)/drive \
	  > $(DEMO_ROOT)/drive.ndjson 2> $(DEMO_ROOT)/drive.log && \
	  $(BIN)/python -m rovertrain.cli.summary --drive $(DEMO_ROOT)/drive.ndjson && \
	  echo "closed-loop rollouts in $(DEMO_ROOT)/drive/ (rollout.mp4, trajectory.png)"
	$(BIN)/rovertrain drive $(DEMO_ROOT)/policy --world road --supervised --record $(DEMO_ROOT) --seeds 3 \
	  --seconds 120 > $(DEMO_ROOT)/supervised.ndjson 2> $(DEMO_ROOT)/supervised.log && \
	  $(BIN)/python -m rovertrain.cli.summary --drive $(DEMO_ROOT)/supervised.ndjson && \
	  echo "supervised round: 3 drives recorded under $(DEMO_ROOT)/recordings (the policy's commands marked by: policy)"
	$(BIN)/python -c 'import json, sys; job = json.load(open(sys.argv[1])); job.pop("sessions"); \
	  json.dump(job, open(sys.argv[2], "w"), indent=2)' $(DEMO_ROOT)/job.json $(DEMO_ROOT)/job-all.json
	$(BIN)/rovertrain run --job $(DEMO_ROOT)/job-all.json > $(DEMO_ROOT)/events-round1.ndjson && \
	  $(BIN)/python -m rovertrain.cli.summary $(DEMO_ROOT)/events-round1.ndjson && \
	  echo "the next job trained on every recording, the supervised drives included"
	@echo "every step's events (NDJSON) are in $(DEMO_ROOT)/*.ndjson"
	@echo "look at the drives, models and jobs in a browser: $(BIN)/rovertrain review $(DEMO_ROOT)"

bench: install
	$(BIN)/python bench/bench_training.py
	$(BIN)/python bench/bench_decode.py
	$(BIN)/python bench/bench_pipeline.py
	$(BIN)/python bench/bench_memory.py
	$(BIN)/python bench/bench_runtime.py
	$(BIN)/python bench/bench_import.py

clean:
	rm -rf $(VENV) $(DEMO_ROOT) .pytest_cache .mypy_cache .ruff_cache
