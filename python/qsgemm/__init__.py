"""qsgemm: PyTorch ops for qsgemm's FP8 GEMMs on Hopper (2:4-sparse FP8, blockwise FP8).

``import qsgemm`` loads the bundled extension (``libqsgemm_torch.so``, next to the one
``libqsgemm.so.0`` of the wheel), which registers the ops ``torch.ops.qsgemm.*`` with CPU and CUDA
kernels; ``qsgemm.ops`` holds their fake (meta) kernels and thin Python wrappers that raise
ValueError / NotImplementedError / RuntimeError with the library's message. See docs/python.md.
"""

from pathlib import Path as _Path

import torch as _torch

__version__ = "0.1.0"


def _load_extension() -> None:
    here = _Path(__file__).resolve().parent
    lib = here / "libqsgemm_torch.so"
    if not lib.exists():
        raise ImportError(
            f"qsgemm: the compiled ops {lib} are missing; build the package with `pip install ./python` "
            "(see docs/python.md)"
        )
    _torch.ops.load_library(str(lib))


_load_extension()

from . import _ops as ops  # noqa: E402  (the ops must be registered first)

__all__ = ["ops", "__version__"]

# ---- pkg-py: quantized weight tensors, model conversion, serialization (issue #25 items 3-5) ----
from .tensors import BlockwiseFp8Tensor, QuantizedWeightTensor, Sparse24Fp8Tensor  # noqa: E402
from .tensors import W4A4LowRankTensor  # noqa: E402
from .configs import BlockwiseFp8Config, Sparse24Fp8Config, W4A4LowRankConfig  # noqa: E402
from .calibration import collect_act_amax  # noqa: E402
from .quantize import SkippedLayer, quantize_  # noqa: E402
from .serialization import (  # noqa: E402
    load_quantized,
    load_quantized_state_dict,
    save_quantized,
)

__all__ += [
    "Sparse24Fp8Tensor",
    "BlockwiseFp8Tensor",
    "QuantizedWeightTensor",
    "Sparse24Fp8Config",
    "BlockwiseFp8Config",
    "SkippedLayer",
    "quantize_",
    "save_quantized",
    "load_quantized",
    "load_quantized_state_dict",
    "W4A4LowRankTensor",
    "W4A4LowRankConfig",
    "collect_act_amax",
]
# ---- end pkg-py ----
