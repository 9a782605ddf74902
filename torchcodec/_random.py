"""Where samplers and random transforms draw their random numbers from.

``generator`` may be:

- ``None``: torch's global generator when the bridge is torch (so ``torch.manual_seed(s)`` gives
  TorchCodec's draws for the same seed), otherwise numpy's unseeded ``default_rng()``;
- an int seed (a Python or numpy integer, not a bool): a fresh ``numpy.random.default_rng(seed)``,
  reproducible without torch and the same under every bridge;
- a ``numpy.random.Generator``: used as is, its state advances;
- a ``torch.Generator``: torch draws with that generator.

Draws follow TorchCodec's calls one for one: integers are ``torch.randint(low, high, (n,))``
and floats are ``torch.rand(n, dtype=torch.float64)``, so the same torch state gives the same values.
"""
from __future__ import annotations

import numbers
from typing import Any

from torchcodec._outputs import adapter_of, get_bridge


def _is_torch_generator(generator: Any) -> bool:
    adapter = adapter_of(generator, "generator")
    return adapter is not None and adapter.name == "torch"


def _is_seed(generator: Any) -> bool:
    return isinstance(generator, numbers.Integral) and not isinstance(generator, bool)


def _numpy_generator(generator: Any) -> Any:
    import numpy as np

    if isinstance(generator, np.random.Generator):
        return generator
    if generator is None or _is_seed(generator):
        return np.random.default_rng(None if generator is None else int(generator))
    raise TypeError(
        "generator must be None, an int seed, a numpy.random.Generator or a torch.Generator, "
        f"got {type(generator).__name__}"
    )


def _uses_torch(generator: Any) -> bool:
    return _is_torch_generator(generator) or (generator is None and get_bridge() == "torch")


def check_generator(generator: Any) -> None:
    """Raise TypeError now, before any decoding, when ``generator`` is not an accepted kind."""
    if generator is None or _is_seed(generator) or _is_torch_generator(generator):
        return
    _numpy_generator(generator)          # a numpy Generator passes; anything else raises TypeError


def integers(low: int, high: int, n: int, generator: Any = None) -> list[int]:
    """``n`` integers drawn uniformly from ``[low, high)``, as a Python list."""
    if high <= low:
        raise ValueError(f"cannot draw integers from the empty range [{low}, {high})")
    if _uses_torch(generator):
        import torch

        return torch.randint(low, high, (n,), generator=generator).tolist()
    return [int(v) for v in _numpy_generator(generator).integers(low, high, size=n)]


def uniform(n: int, generator: Any = None) -> list[float]:
    """``n`` float64 values drawn uniformly from ``[0, 1)``, as a Python list."""
    if _uses_torch(generator):
        import torch

        return torch.rand(n, dtype=torch.float64, generator=generator).tolist()
    return [float(v) for v in _numpy_generator(generator).random(n)]
