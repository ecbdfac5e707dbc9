# The two commands: `make demo` and `make test`.  Each sets everything up itself.
SHELL := /bin/bash
VENV  ?= .venv
PY    := $(VENV)/bin/python
PIP   := $(PY) -m pip --disable-pip-version-check -q
# Debian packages the tests use; installed when missing and we are root.  pdflatex with booktabs
# (texlive-latex-recommended) and siunitx (texlive-science) compiles the --figures tables in the LaTeX test.
DEB_PACKAGES := poppler-utils rt-tests jitterdebugger stress-ng texlive-latex-base texlive-latex-recommended \
	texlive-science
STAMP := $(VENV)/.jitterscope-installed
SOURCES := $(shell find capture analysis -type f \( -name '*.c' -o -name '*.h' -o -name '*.py' -o -name CMakeLists.txt \) 2>/dev/null) pyproject.toml
PYTEST_ARGS ?=

.PHONY: demo test install debs lint capture clean

demo: install
	$(VENV)/bin/jitterscope demo

test: install debs
	$(VENV)/bin/ruff check analysis tests benchmarks
	$(PY) -m pytest -n 2 --dist loadgroup -p no:cacheprovider $(PYTEST_ARGS)

install: $(STAMP)

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install --upgrade pip

# compileall: the editable install leaves the package's bytecode to the first import, which writes none where
# PYTHONDONTWRITEBYTECODE is set: every command would compile its modules again (0.5 s of CPU for all of them)
$(STAMP): $(PY) $(SOURCES)
	$(PIP) install scikit-build-core cmake ninja
	$(PIP) install --no-build-isolation -e '.[test]'
	$(PY) -m compileall -q analysis/jitterscope
	touch $@

debs:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages: $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "warning: missing Debian packages ($$missing); run as root or install them" >&2; fi; \
	fi

lint: install
	$(VENV)/bin/ruff check analysis tests benchmarks

clean:
	rm -rf build $(VENV) .pytest_cache
