# `make book` builds the book from the committed runs; `make test` runs every test.
# Each creates .venv and installs requirements.txt on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat requirements.txt pyproject.toml | cksum | cut -d' ' -f1)
# No OMP_WAIT_POLICY here: PASSIVE made a 2-thread training step 2-3x slower (sweep workers set their own).

.PHONY: venv test book mutate clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	rm -f $(VENV)/.installed-* && touch $@

venv: $(STAMP)

# The HTML is rendered from the committed executed chapters (no re-execution) for the browser test;
# nbval then re-executes every chapter and compares the cells marked NBVAL_CHECK_OUTPUT.
test: $(STAMP)
	$(BIN)/python -m assignadd_core.report.book build
	$(BIN)/python -m pytest --nbval-lax --nbval-current-env tests book/chapters

# papermill executes notebooks/*.ipynb into book/chapters/, then jupyter-book renders _build/html.
book: $(STAMP)
	$(BIN)/python -m assignadd_core.report.book all --profile params/book.yaml

# Mutation testing (not part of `make test`: about 16 minutes on 2 cores, see README): installs mutmut on first use, runs it
# over every module of benchmarks/mutation_run.py's PLAN, each against its own tests, and prints the score per module.
# Narrow it with e.g. `make mutate MUTATE_ONLY=assignadd_core/rules/verdicts.py MUTATE_TESTS=tests/test_verdicts.py`;
# MUTATE_JOBS parallel mutant workers (single-threaded each).
MUTMUT       := 3.8.1
MUTATE_JOBS  ?= 2
MUTATE_ONLY  ?=
MUTATE_TESTS ?=
mutate: $(STAMP)
	$(BIN)/pip show mutmut 2>/dev/null | grep -qx 'Version: $(MUTMUT)' || $(BIN)/pip install -q mutmut==$(MUTMUT)
	$(BIN)/python benchmarks/mutation_run.py --max-children $(MUTATE_JOBS) \
		$(if $(MUTATE_ONLY),--only $(MUTATE_ONLY)) $(if $(MUTATE_TESTS),--tests "$(MUTATE_TESTS)")
	$(BIN)/python benchmarks/mutation_report.py $(MUTATE_ONLY)

clean:
	rm -rf _build
