"""Shared fixtures of the qsgemm package tests.

GPU tests take the ``gpu`` fixture: it skips them, saying why, without a CUDA sm_90 device, and
fails them instead when QSGEMM_REQUIRE_GPU=1 (the H200 run: a skip there would hide a broken setup).
"""

import os

import pytest
import torch

import qsgemm  # noqa: F401  (registers the ops)


def gpu_unavailable_reason():
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != (9, 0):
        return f"{torch.cuda.get_device_name()} is sm_{major}{minor}; the qsgemm kernels need sm_90 (Hopper)"
    return None


@pytest.fixture
def gpu():
    reason = gpu_unavailable_reason()
    if reason is not None:
        if os.environ.get("QSGEMM_REQUIRE_GPU") == "1":
            pytest.fail(f"QSGEMM_REQUIRE_GPU=1 but {reason}")
        pytest.skip(reason)
    return torch.device("cuda")


@pytest.fixture(autouse=True)
def _seed(request):
    # A fixed seed per test (its name), fresh data per case.
    torch.manual_seed(abs(hash(request.node.nodeid)) % (2**31))
