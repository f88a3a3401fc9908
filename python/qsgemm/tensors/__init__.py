"""Quantized weight tensors: torch tensor subclasses that replace ``nn.Linear.weight``."""

from ._base import LOGICAL_DTYPES, QuantizedWeightTensor
from .blockwise import BLOCKWISE_GRANULARITIES, BlockwiseFp8Tensor
from .sparse24 import Sparse24Fp8Tensor, sparse24_meta_bytes
from .w4a4 import W4A4LowRankTensor

__all__ = [
    "LOGICAL_DTYPES",
    "QuantizedWeightTensor",
    "Sparse24Fp8Tensor",
    "BlockwiseFp8Tensor",
    "BLOCKWISE_GRANULARITIES",
    "sparse24_meta_bytes",
    "W4A4LowRankTensor",
]
