"""``qsgemm.quantize_``: replace the weights of eligible ``nn.Linear`` layers in place."""

from __future__ import annotations

import warnings
from typing import Callable, List, NamedTuple, Optional

import torch
import torch.nn as nn

from .configs import ALL_CONFIGS, TORCHAO_AVAILABLE
from .tensors import QuantizedWeightTensor


class SkippedLayer(NamedTuple):
    """A layer ``quantize_`` left as it was, and why."""

    name: str
    reason: str


def _convert_linear(module: nn.Linear, config, name: str = "") -> Optional[str]:
    """Swap ``module.weight`` for the config's tensor; return the reason it was skipped, or None."""
    weight = module.weight
    if isinstance(weight, QuantizedWeightTensor):
        return f"already quantized ({type(weight).__name__})"
    reason = config.check(weight)
    if reason is not None:
        return reason
    try:
        with torch.no_grad():
            named = getattr(config, "quantize_named_weight", None)  # per-layer calibration data
            qweight = (named(weight.detach(), name) if named is not None
                       else config.quantize_weight(weight.detach()))
    except (ValueError, NotImplementedError) as e:
        # e.g. prune="require" on a weight that is not 2:4, or non-finite values
        return str(e)
    except RuntimeError as e:  # a direct op call's tagged library error (docs: PKG_API "Errors")
        if "[qsgemm:invalid" in str(e):
            return str(e)
        raise
    module.weight = nn.Parameter(qweight, requires_grad=False)
    return None


def _default_filter(module: nn.Module, name: str) -> bool:
    return isinstance(module, nn.Linear)


def quantize_(
    model: nn.Module,
    config,
    filter_fn: Optional[Callable[[nn.Module, str], bool]] = None,
) -> List[SkippedLayer]:
    """Quantize the weights of ``model``'s ``nn.Linear`` layers in place with ``config``.

    Args:
      model: any module; its ``nn.Linear`` submodules (and ``model`` itself if it is one) are
        candidates.
      config: ``Sparse24Fp8Config``, ``BlockwiseFp8Config`` or ``W4A4LowRankConfig``.
      filter_fn: ``filter_fn(module, fully_qualified_name) -> bool`` (torchao's convention);
        only ``nn.Linear`` modules for which it returns True are converted. Default: all.

    A layer whose weight the config cannot take (a shape rule, a dtype, ``prune="require"`` on a
    weight that is not 2:4, an already quantized weight) is left unchanged. One warning lists them
    all. Returns that list (``SkippedLayer(name, reason)``), also stored as
    ``model.qsgemm_skipped_layers``. The bias and the layer's other state are untouched;
    ``weight.dtype`` stays the original dtype (the logical dtype of the quantized tensor).
    """
    if not isinstance(config, ALL_CONFIGS):
        raise TypeError(f"qsgemm.quantize_: config must be one of "
                        f"{[c.__name__ for c in ALL_CONFIGS]}, got {type(config).__name__}")
    skipped: List[SkippedLayer] = []
    for name, module in list(model.named_modules()):
        if not isinstance(module, nn.Linear):
            continue
        if filter_fn is not None and not filter_fn(module, name):
            continue
        reason = _convert_linear(module, config, name)
        if reason is not None:
            skipped.append(SkippedLayer(name or "<root>", reason))
    if skipped:
        lines = "\n".join(f"  {s.name}: {s.reason}" for s in skipped)
        warnings.warn(
            f"qsgemm.quantize_ ({type(config).__name__}) left {len(skipped)} linear layer(s) "
            f"unquantized:\n{lines}",
            stacklevel=2,
        )
    try:
        model.qsgemm_skipped_layers = skipped
    except Exception:  # a module that refuses new attributes: the return value still has them
        pass
    return skipped


# ---- torchao integration (optional) -----------------------------------------------------------
def _register_torchao_handlers() -> bool:
    """Let ``torchao.quantization.quantize_(model, qsgemm.<Config>())`` work when torchao is here."""
    if not TORCHAO_AVAILABLE:
        return False
    try:
        from torchao.quantization.transform_module import register_quantize_module_handler
    except Exception:
        return False

    def _handler(module: nn.Module, config) -> nn.Module:
        if isinstance(module, nn.Linear):
            reason = _convert_linear(module, config)
            if reason is not None:
                warnings.warn(f"qsgemm ({type(config).__name__}) left a linear layer of weight "
                              f"shape {tuple(module.weight.shape)} unquantized: {reason}")
        return module

    for cfg in ALL_CONFIGS:
        register_quantize_module_handler(cfg)(_handler)
    return True


TORCHAO_HANDLERS_REGISTERED = _register_torchao_handlers()
