# The two commands of the README's quick start.
.PHONY: demo test lint bootstrap

bootstrap:
	bash scripts/bootstrap.sh

# Run the embedded default family under a 2 GiB cgroup cap (root or a delegated cgroup).
demo: bootstrap
	.venv/bin/qualify run --family tiny --mem 2G

lint: bootstrap
	.venv/bin/ruff check qualify harness tests benchmarks families
	.venv/bin/ruff format --check qualify harness tests benchmarks families
	.venv/bin/mypy

# Lint, type-check and run the whole suite (privileged and slow tests included).
test: lint
	rm -f .coverage .coverage.*
	QUALIFY_TEST_STRICT=1 COVERAGE_FILE=$(CURDIR)/.coverage .venv/bin/coverage run -m pytest --durations=40
	COVERAGE_FILE=$(CURDIR)/.coverage .venv/bin/coverage combine -q
	COVERAGE_FILE=$(CURDIR)/.coverage .venv/bin/coverage report
