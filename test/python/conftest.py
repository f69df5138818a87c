"""pytest setup for the qopt Python module: the build directory's module and
tools (QOPT_BUILD_DIR, default ./build) and the shared models
(QOPT_SHARED_DIR, default ../shared)."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("QOPT_BUILD_DIR", os.path.join(ROOT, "build"))
SHARED = os.environ.get("QOPT_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
sys.path.insert(0, os.path.join(BUILD, "python"))


@pytest.fixture
def tools():
    return {name: os.path.join(BUILD, "bin", name) for name in ("qopt", "qopt-run")}


def shared_model(name):
    path = os.path.join(SHARED, "models", name)
    if not os.path.exists(path):
        pytest.skip("no shared model %s (set QOPT_SHARED_DIR)" % name)
    return path
