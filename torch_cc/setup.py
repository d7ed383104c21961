"""Builds torch_cc: cc as a torch.distributed backend (docs/torch.md).

    make torch                                  # into build/python (PYTHONPATH=build/python)
    pip install --no-build-isolation ./torch_cc # into the Python that has torch

The extension is compiled against the torch that this Python imports, so pip
must not build it in an isolated environment with another torch: hence
--no-build-isolation. cc.h is taken from the directory above this one (the cc
repository) or from $CC_HEADER_DIR.
"""
import os
import sys

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))

try:
    import torch  # noqa: F401
    from torch.utils.cpp_extension import BuildExtension, CppExtension
except ImportError:
    sys.exit("torch_cc: this Python has no torch. torch_cc builds against the torch that is installed: "
             "install torch first, then `pip install --no-build-isolation ./torch_cc` (without "
             "--no-build-isolation pip builds in a fresh environment that has no torch)")

cc_dir = os.environ.get("CC_HEADER_DIR") or os.path.dirname(here)
if not os.path.isfile(os.path.join(cc_dir, "cc.h")):
    sys.exit(f"torch_cc: cc.h is not in {cc_dir}: build from the cc repository (torch_cc/ beside cc.h) "
             "or set CC_HEADER_DIR to the directory that holds cc.h")

# TORCH_CC_OPT: the optimisation level (make torch passes -O2; one translation
# unit that includes torch's headers takes most of a minute on two cores).
opt = os.environ.get("TORCH_CC_OPT", "-O2")

setup(
    name="torch_cc",
    version="0.1.0",
    description="cc (collective communication in one header) as a torch.distributed backend",
    license="MIT",
    packages=["torch_cc"],
    ext_modules=[
        CppExtension(
            "torch_cc._C",
            ["csrc/process_group_cc.cpp"],
            include_dirs=[cc_dir],
            extra_compile_args=[opt, "-g0", "-Wall", "-Wno-unused-parameter", "-fvisibility=hidden", "-pthread"],
            extra_link_args=["-pthread"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)},
    zip_safe=False,
)
