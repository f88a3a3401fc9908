"""Saving and loading quantized models: safetensors with versioned JSON metadata, and torch.save.

File layout (safetensors)
-------------------------
Every plain tensor of the state dict is stored under its own name. A quantized weight ``<name>``
(``Sparse24Fp8Tensor``, ``BlockwiseFp8Tensor``) is flattened into its plain buffers, stored as
``<name>.<buffer>`` (``<name>.qdata``, ``<name>.sparse_metadata``, ``<name>.scale``), byte for byte.
The safetensors header's string metadata holds ``"qsgemm"``: a JSON object

    {"format_version": 1,
     "tensors": {"<name>": {"type": "Sparse24Fp8Tensor",
                            "shape": [N, K],
                            "attributes": {"dtype": "bfloat16", "transposed": false, ...},
                            "granularity": "per_channel",
                            "data": {"qdata": "<name>.qdata", ...}}}}

``granularity`` is informative (for readers that do not load the tensor); the ``attributes`` are
what the tensor's constructor takes. A reader refuses a file whose ``format_version`` is newer than
its own ``FORMAT_VERSION`` (``ValueError`` saying so) and an unknown ``type``. Plain tensors need no
entry, so a file without quantized tensors is an ordinary safetensors file.

torch.save
----------
``torch.save(model.state_dict(), f)`` pickles the tensor subclasses; importing ``qsgemm``
registers them with ``torch.serialization.add_safe_globals`` so that
``torch.load(f, weights_only=True)`` accepts them.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple, Union

import torch
import torch.nn as nn

from .tensors import BlockwiseFp8Tensor, QuantizedWeightTensor, Sparse24Fp8Tensor, W4A4LowRankTensor

#: Version of the file layout above. Bump it when a reader of the old version would misread a file.
FORMAT_VERSION = 1
METADATA_KEY = "qsgemm"

#: The quantized tensor types a file may hold, by the name written in the metadata.
TENSOR_TYPES = {
    "Sparse24Fp8Tensor": Sparse24Fp8Tensor,
    "BlockwiseFp8Tensor": BlockwiseFp8Tensor,
    "W4A4LowRankTensor": W4A4LowRankTensor,
}

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def _encode_attr(value: Any) -> Any:
    if isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    return value


def _decode_attrs(attrs: Mapping[str, Any], name: str) -> Dict[str, Any]:
    out = dict(attrs)
    if "dtype" in out:
        if out["dtype"] not in _DTYPES:
            raise ValueError(f"qsgemm file: tensor {name!r} has an unknown dtype {out['dtype']!r}")
        out["dtype"] = _DTYPES[out["dtype"]]
    return out


def flatten_state_dict(state_dict: Mapping[str, torch.Tensor]) -> Tuple[Dict[str, torch.Tensor], Dict[str, str]]:
    """(plain tensors, safetensors string metadata) for a state dict with quantized tensors."""
    tensors: Dict[str, torch.Tensor] = {}
    entries: Dict[str, Any] = {}

    def put(key: str, t: torch.Tensor):
        if key in tensors:
            raise ValueError(f"qsgemm.save_quantized: two tensors would be stored as {key!r}")
        tensors[key] = t

    for name, t in state_dict.items():
        if isinstance(t, QuantizedWeightTensor):
            type_name = type(t).__name__
            if type_name not in TENSOR_TYPES:
                raise TypeError(f"qsgemm.save_quantized: {name!r} is a {type_name}, which has no "
                                f"file format")
            data = {}
            for dname, d in zip(t.tensor_data_names, t._data()):
                key = f"{name}.{dname}"
                put(key, d)
                data[dname] = key
            entries[name] = {
                "type": type_name,
                "shape": list(t.shape),
                "attributes": {k: _encode_attr(v) for k, v in t._attributes().items()},
                "granularity": t.granularity,
                "data": data,
            }
        elif isinstance(t, torch.Tensor):
            put(name, t)
        else:
            raise TypeError(f"qsgemm.save_quantized: {name!r} is a {type(t).__name__}, not a tensor")
    meta = {METADATA_KEY: json.dumps({"format_version": FORMAT_VERSION, "tensors": entries},
                                     sort_keys=True),
            "format": "pt"}
    return tensors, meta


def unflatten_state_dict(tensors: Mapping[str, torch.Tensor],
                         metadata: Optional[Mapping[str, str]]) -> Dict[str, torch.Tensor]:
    """Inverse of :func:`flatten_state_dict`."""
    raw = (metadata or {}).get(METADATA_KEY)
    if raw is None:
        return dict(tensors)
    header = json.loads(raw)
    version = header.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"qsgemm file: invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"qsgemm file format version {version} is newer than this qsgemm's "
            f"({FORMAT_VERSION}); upgrade qsgemm to load it"
        )
    out: Dict[str, torch.Tensor] = {}
    used = set()
    for name, entry in header.get("tensors", {}).items():
        type_name = entry.get("type")
        cls = TENSOR_TYPES.get(type_name)
        if cls is None:
            raise ValueError(f"qsgemm file: tensor {name!r} has an unknown type {type_name!r}")
        data = entry["data"]
        missing = [d for d in cls.tensor_data_names if data.get(d) not in tensors]
        if missing:
            raise ValueError(f"qsgemm file: tensor {name!r} lacks its buffers {missing}")
        t = cls(*[tensors[data[d]] for d in cls.tensor_data_names],
                **_decode_attrs(entry.get("attributes", {}), name))._fast_layout()
        if list(t.shape) != list(entry["shape"]):
            raise ValueError(f"qsgemm file: tensor {name!r} has shape {list(t.shape)} but the "
                             f"metadata says {entry['shape']}")
        out[name] = t
        used.update(data[d] for d in cls.tensor_data_names)
    for key, t in tensors.items():
        if key not in used:
            out[key] = t
    return out


def _dedup_storage(tensors: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Contiguous CPU tensors, cloning any that share storage with an earlier one (tied weights):
    safetensors refuses shared storage."""
    seen = set()
    out = {}
    for k, t in tensors.items():
        t = t.detach().to("cpu").contiguous()
        ptr = t.untyped_storage().data_ptr() if t.numel() else None
        if ptr is not None and ptr in seen:
            t = t.clone()
            ptr = t.untyped_storage().data_ptr()
        if ptr is not None:
            seen.add(ptr)
        out[k] = t
    return out


def _safetensors():
    try:
        import safetensors
        import safetensors.torch  # noqa: F401
    except ImportError as e:
        raise ImportError("qsgemm.save_quantized / load_quantized need safetensors: "
                          "pip install safetensors") from e
    return safetensors


def save_quantized(model_or_state_dict: Union[nn.Module, Mapping[str, torch.Tensor]],
                   path: Union[str, os.PathLike],
                   metadata: Optional[Mapping[str, str]] = None) -> None:
    """Write a (quantized) model's state dict to a safetensors file (layout: module docstring).

    ``metadata``: extra string key/values for the header (the key ``"qsgemm"`` is reserved).
    """
    save_file = _safetensors().torch.save_file
    sd = (model_or_state_dict.state_dict() if isinstance(model_or_state_dict, nn.Module)
          else model_or_state_dict)
    tensors, meta = flatten_state_dict(sd)
    if metadata:
        if METADATA_KEY in metadata:
            raise ValueError(f"qsgemm.save_quantized: metadata key {METADATA_KEY!r} is reserved")
        meta = {**{str(k): str(v) for k, v in metadata.items()}, **meta}
    save_file(_dedup_storage(tensors), os.fspath(path), metadata=meta)


def load_quantized_state_dict(path: Union[str, os.PathLike],
                              device: Union[str, torch.device] = "cpu") -> Dict[str, torch.Tensor]:
    """Read a file written by :func:`save_quantized` into a state dict (quantized tensors rebuilt)."""
    safe_open = _safetensors().safe_open
    with safe_open(os.fspath(path), framework="pt", device=str(device)) as f:
        metadata = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    return unflatten_state_dict(tensors, metadata)


class LoadResult(NamedTuple):
    missing_keys: List[str]
    unexpected_keys: List[str]


def _resolve(model: nn.Module, name: str):
    module_name, _, attr = name.rpartition(".")
    try:
        module = model.get_submodule(module_name) if module_name else model
    except AttributeError:
        return None, attr
    return module, attr


def load_quantized(model: nn.Module, path: Union[str, os.PathLike], strict: bool = True,
                   device: Optional[Union[str, torch.device]] = None) -> LoadResult:
    """Load a file written by :func:`save_quantized` into ``model`` (quantized or not).

    A quantized entry replaces the parameter of that name (so a freshly built, unquantized model
    becomes the quantized one), on ``device`` or else the device of the parameter it replaces; a
    plain entry is copied into the existing parameter or buffer (keeping its device and dtype). A
    model built on the meta device gets new tensors, on ``device`` or else the CPU.
    With ``strict``, keys of the model missing from the file, or of the file missing from the
    model, raise a ``KeyError``; otherwise they are returned.
    """
    sd = load_quantized_state_dict(path, device="cpu")
    expected = set(model.state_dict().keys())
    missing = sorted(expected - set(sd))
    unexpected = sorted(set(sd) - expected)
    if strict and (missing or unexpected):
        raise KeyError(f"qsgemm.load_quantized: missing keys {missing}, unexpected keys {unexpected}")
    with torch.no_grad():
        for name, value in sd.items():
            if name in unexpected:
                continue
            module, attr = _resolve(model, name)
            if attr in module._parameters:
                current = module._parameters[attr]
                # A model built on the meta device (no storage yet) gets the file's tensors on CPU.
                dev = device if device is not None else (
                    "cpu" if current.is_meta else current.device)
                quantized = isinstance(value, QuantizedWeightTensor)
                if quantized or isinstance(current, QuantizedWeightTensor) or current.is_meta:
                    value = value.to(dev) if quantized else value.to(dev, current.dtype)
                    module._parameters[attr] = nn.Parameter(
                        value, requires_grad=False if quantized else current.requires_grad)
                else:
                    current.copy_(value)
            else:
                current = module._buffers[attr]
                if current is None or current.is_meta or isinstance(value, QuantizedWeightTensor):
                    dev = device if device is not None else (
                        "cpu" if current is None or current.is_meta else current.device)
                    module._buffers[attr] = value.to(dev)
                else:
                    current.copy_(value)
    return LoadResult(missing, unexpected)


# ---- torch.load(weights_only=True) ------------------------------------------------------------
def _register_safe_globals() -> None:
    torch.serialization.add_safe_globals([Sparse24Fp8Tensor, BlockwiseFp8Tensor, W4A4LowRankTensor])


_register_safe_globals()
