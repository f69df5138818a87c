# lit configuration for qopt's FileCheck tests.
import os
import shutil

import lit.formats

config.name = "qopt"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".qir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.qopt_obj_root, "test", "lit")
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]

config.environment["PATH"] = os.pathsep.join(
    [config.qopt_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])

inputs = os.path.join(config.qopt_src_root, "test", "inputs")
config.substitutions.append(("%inputs", inputs))
config.substitutions.append(("%shared", config.shared_dir))
config.substitutions.append(("%test_plugins", config.qopt_test_plugins))
config.substitutions.append(("%qopt_obj_root", config.qopt_obj_root))
config.substitutions.append(("%qopt_src_root", config.qopt_src_root))
config.substitutions.append(("%python", "/usr/bin/python3"))

# ASan + UBSan builds (build-asan): a test whose cost is in programs the
# sanitizers do not instrument (Chromium) runs in the release build only.
if getattr(config, "qopt_sanitized", False):
    config.available_features.add("sanitized")

# Tests on ../shared models need the shared folder next to the checkout.
if os.path.isdir(os.path.join(config.shared_dir, "models")):
    config.available_features.add("shared-models")
if os.path.isfile("/usr/bin/python3"):
    config.available_features.add("python-onnx")

# Device nodes made for a test (root, and a filesystem that allows them).
def _can_mknod():
    import stat
    import tempfile
    if not hasattr(os, "mknod") or os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as d:
        try:
            os.mknod(os.path.join(d, "null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            return True
        except OSError:
            return False
if _can_mknod():
    config.available_features.add("mknod")

# Report rendering: graphviz and headless Chromium (Debian packages).
if shutil.which("dot"):
    config.available_features.add("dot")
if shutil.which("chromium"):
    config.available_features.add("chromium")
    config.substitutions.append(("%chromium", shutil.which("chromium")))

# ONNX Runtime from npm (scripts/test.sh installs it into ./node_modules).
ort_dir = os.path.join(config.qopt_src_root, "node_modules", "onnxruntime-node")
if os.path.isdir(ort_dir) and shutil.which("node"):
    config.available_features.add("onnxruntime")
    config.substitutions.append(("%node", shutil.which("node")))
