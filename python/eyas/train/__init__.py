"""Drafter training (EAGLE-3 / HASS) in PyTorch.

Everything torch-related in eyas lives under this package; the inference engine never imports it.
Install the extra with ``pip install eyas[train]``. Entry point: ``eyas train-drafter`` or
``python -m eyas.train``.
"""


def require_torch():
    """Import torch or raise a clear error (the engine itself never needs it)."""
    try:
        import torch  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("[train] PyTorch is required for drafter training: pip install 'eyas[train]'") from e
    return torch
