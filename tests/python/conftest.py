"""Shared set-up of the Python suite: where the build tree is, how to run the
examples, and the check that every binding of the module is called."""

import functools
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("MTF_BUILD_DIR", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))

import mtf  # noqa: E402

DATA_DIR = "/usr/share/datasets/fashion-mnist"

# ---- every function of mtf, mtf.layers, mtf.optimize and mtf.data is called
CALLED = set()
MODULES = {"mtf": mtf, "mtf.layers": mtf.layers, "mtf.data": mtf.data}


def _count(qualified, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        CALLED.add(qualified)
        return fn(*args, **kwargs)
    return wrapper


BINDINGS = []
for _prefix, _module in MODULES.items():
    for _name in dir(_module):
        _obj = getattr(_module, _name)
        if not _name.startswith("_") and type(_obj).__name__ == "builtin_function_or_method":
            BINDINGS.append(f"{_prefix}.{_name}")
            setattr(_module, _name, _count(f"{_prefix}.{_name}", _obj))


def pytest_collection_modifyitems(items):
    # The coverage check runs last, after every other test.
    items.sort(key=lambda item: item.name == "test_every_binding_is_called")


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(BUILD, "python") + os.pathsep + e.get("PYTHONPATH", "")
    return e


def run(cmd, timeout=600, **kwargs):
    """Runs a command; returns its stdout; fails the test with its output otherwise."""
    p = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=timeout, **kwargs)
    if p.returncode != 0:
        pytest.fail(f"{cmd} exited with {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout


@pytest.fixture
def graph():
    g = mtf.Graph()
    return g, mtf.Mesh(g, "mesh")
