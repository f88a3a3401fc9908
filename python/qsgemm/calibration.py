"""Calibration statistics for SVDQuant's smoothing (``W4A4LowRankConfig(act_amax=...)``)."""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Optional

import torch
import torch.nn as nn


@torch.no_grad()
def collect_act_amax(
    model: nn.Module,
    batches: Iterable,
    filter_fn: Optional[Callable[[nn.Module, str], bool]] = None,
) -> Dict[str, torch.Tensor]:
    """Run ``model`` on each of ``batches`` (a tensor, or a tuple/list of positional arguments,
    or a dict of keyword arguments) and return ``{layer name: max |x| per input channel}``
    (float32 [K]) over every ``nn.Linear`` input seen (those ``filter_fn(module, name)`` accepts).
    The names are ``model.named_modules()``'s, as ``quantize_`` uses them."""
    stats: Dict[str, torch.Tensor] = {}
    hooks = []

    def hook_for(name):
        def hook(module, args):
            x = args[0].detach()
            a = x.reshape(-1, x.shape[-1]).abs().amax(dim=0).to(torch.float32)
            stats[name] = a if name not in stats else torch.maximum(stats[name], a)
        return hook

    for name, module in model.named_modules():
        if isinstance(module, nn.Linear) and (filter_fn is None or filter_fn(module, name)):
            hooks.append(module.register_forward_pre_hook(hook_for(name)))
    try:
        for batch in batches:
            if isinstance(batch, dict):
                model(**batch)
            elif isinstance(batch, (tuple, list)):
                model(*batch)
            else:
                model(batch)
    finally:
        for h in hooks:
            h.remove()
    return stats
